! The communicator info key sluice_p2p_path from Fortran (MPI_COMM_DUP_WITH_INFO and
! MPI_COMM_SET_INFO, the mpi module or -DF08 mpi_f08): ranks 0 and 1 exchange 1 MiB of every
! other double on a communicator whose key is $SLUICE_TEST_PATH (none when unset), twice (one
! communicator of each constructor), and check every received value. The driver
! (tests/mpi_fortran.rs) checks from SLUICE_STATS that the key took effect.
program comm_info
#ifdef F08
  use mpi_f08
#else
  use mpi
#endif
  implicit none
  integer, parameter :: n = 131072
  double precision, allocatable :: a(:), b(:)
  integer :: rank, peer, ierr, i, k, bad, plen, pstat
  character(len=32) :: path
#ifdef F08
  type(MPI_Comm) :: c(2)
  type(MPI_Info) :: info
  type(MPI_Datatype) :: every2
  type(MPI_Status) :: st
#else
  integer :: c(2), info, every2, st(MPI_STATUS_SIZE)
#endif
  call MPI_INIT(ierr)
  call MPI_COMM_RANK(MPI_COMM_WORLD, rank, ierr)
  peer = 1 - rank
  call get_environment_variable('SLUICE_TEST_PATH', path, plen, pstat)
  call MPI_INFO_CREATE(info, ierr)
  if (pstat == 0 .and. plen > 0) call MPI_INFO_SET(info, 'sluice_p2p_path', trim(path), ierr)
  call MPI_COMM_DUP_WITH_INFO(MPI_COMM_WORLD, info, c(1), ierr)
  call MPI_COMM_DUP(MPI_COMM_WORLD, c(2), ierr)
  call MPI_COMM_SET_INFO(c(2), info, ierr)
  call MPI_INFO_FREE(info, ierr)
  call MPI_TYPE_VECTOR(n, 1, 2, MPI_DOUBLE_PRECISION, every2, ierr)
  call MPI_TYPE_COMMIT(every2, ierr)
  allocate(a(2 * n), b(2 * n))
  bad = 0
  do k = 1, 2
    do i = 1, 2 * n
      a(i) = rank * 1.0d7 + i + k
    end do
    b = -1
    call MPI_SENDRECV(a, 1, every2, peer, k, b, 1, every2, peer, k, c(k), st, ierr)
    do i = 1, 2 * n
      if (mod(i, 2) == 1) then
        if (b(i) /= peer * 1.0d7 + i + k) bad = bad + 1
      else
        if (b(i) /= -1) bad = bad + 1
      end if
    end do
  end do
  call MPI_TYPE_FREE(every2, ierr)
  call MPI_COMM_FREE(c(1), ierr)
  call MPI_COMM_FREE(c(2), ierr)
  call MPI_ALLREDUCE(MPI_IN_PLACE, bad, 1, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD, ierr)
  if (rank == 0) then
    if (bad == 0) then
      print '(a)', 'PASS comm_info'
    else
      print '(a,i0)', 'FAIL comm_info: wrong values: ', bad
    end if
  end if
  call MPI_FINALIZE(ierr)
end program comm_info
