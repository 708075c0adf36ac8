! p2p_conf.f90 -- point-to-point conformance from Fortran (`use mpi_f08`), on 2 or more ranks
! (ring: send to rank+1, receive from rank-1): a derived vector type (every other double) on
! either side of contiguous transfers and on both sides; MPI_Isend/MPI_Irecv + MPI_Waitall with
! per-request statuses (source, tag, MPI_Get_count in MPI_DOUBLE_PRECISION and in the vector type,
! MPI_UNDEFINED for a partial vector, MPI_Get_elements); MPI_Waitany and MPI_Testany on arrays with
! MPI_REQUEST_NULL entries, the sender releasing one message at a time so the returned index is
! known exactly (1-based), then MPI_UNDEFINED once nothing is active; the gaps of the vector
! receive buffer stay untouched. Rank 0 prints "p2p_conf_f08: OK (<n> checks)".
! MPICH's own mpi_f08 bindings return 0-based indices (pmodels/mpich#6270) and MPI_UNDEFINED+1
! (#6402): as in f08_p2p.f90, the index base is calibrated once with MPICH (sluice returns
! standard 1-based indices there) and MPI_UNDEFINED+1 is accepted from MPICH only.
program p2p_conf
  use mpi_f08
  implicit none
  integer, parameter :: n = 8, ack = 999
  integer :: ierr, rank, nranks, left, right, errs, total, checks, tchecks, i, k, idx, cnt, ioff, reslen
  type(MPI_Datatype) :: vtype
  type(MPI_Request) :: reqs(4), sreq
  type(MPI_Status) :: statuses(4), status
  double precision :: sv(2 * n), sc(n), rv(2 * n), rc(n), rbufs(2 * n, 3), sbufs(2 * n, 3)
  logical :: flag, is_mpich
  character(len=MPI_MAX_LIBRARY_VERSION_STRING) :: libver
  integer :: order(2)

  call MPI_Init(ierr)
  call MPI_Comm_rank(MPI_COMM_WORLD, rank)
  call MPI_Comm_size(MPI_COMM_WORLD, nranks)
  right = mod(rank + 1, nranks)
  left = mod(rank - 1 + nranks, nranks)
  errs = 0
  checks = 0
  call MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN)

  call MPI_Get_library_version(libver, reslen, ierr)
  is_mpich = index(libver(1:reslen), 'MPICH') == 1
  ioff = 0
  if (is_mpich) then
    reqs(1) = MPI_REQUEST_NULL
    reqs(3) = MPI_REQUEST_NULL
    call MPI_Irecv(k, 1, MPI_INTEGER, rank, 1, MPI_COMM_WORLD, reqs(2), ierr)
    call MPI_Send(rank, 1, MPI_INTEGER, rank, 1, MPI_COMM_WORLD, ierr)
    call MPI_Waitany(3, reqs, idx, MPI_STATUS_IGNORE, ierr)
    ioff = 2 - idx
    call check(ioff == 0 .or. ioff == 1, 'index calibration')
  end if

  call MPI_Type_vector(n, 1, 2, MPI_DOUBLE_PRECISION, vtype, ierr)
  call MPI_Type_commit(vtype, ierr)
  call check(ierr == MPI_SUCCESS, 'type_commit')

  ! ---- vector -> contiguous and contiguous -> vector, Waitall -------------------------------
  do i = 1, 2 * n
    sv(i) = rank * 1000 + i
  end do
  do i = 1, n
    sc(i) = rank * 1000 + 500 + i
  end do
  rv = -1
  rc = -1
  call MPI_Irecv(rc, n, MPI_DOUBLE_PRECISION, left, 11, MPI_COMM_WORLD, reqs(1))
  call MPI_Irecv(rv, 1, vtype, left, 12, MPI_COMM_WORLD, reqs(2))
  call MPI_Isend(sv, 1, vtype, right, 11, MPI_COMM_WORLD, reqs(3))
  call MPI_Isend(sc, n, MPI_DOUBLE_PRECISION, right, 12, MPI_COMM_WORLD, reqs(4))
  call MPI_Waitall(4, reqs, statuses, ierr)
  call check(ierr == MPI_SUCCESS, 'waitall ierr')
  do i = 1, 4
    call check(reqs(i) == MPI_REQUEST_NULL, 'waitall frees the requests')
  end do
  call check_status(statuses(1), 11, MPI_DOUBLE_PRECISION, n, n, 'vector -> contiguous')
  call check_status(statuses(2), 12, vtype, 1, n, 'contiguous -> vector')
  call MPI_Get_count(statuses(2), MPI_DOUBLE_PRECISION, cnt)
  call check(cnt == n, 'contiguous -> vector: count in doubles')
  do i = 1, n
    call check(rc(i) == left * 1000 + 2 * i - 1, 'vector -> contiguous data')
    call check(rv(2 * i - 1) == left * 1000 + 500 + i, 'contiguous -> vector data')
    call check(rv(2 * i) == -1, 'contiguous -> vector: gap untouched')
  end do

  ! ---- vector -> vector with a partial element: MPI_UNDEFINED ------------------------------
  rbufs = -1
  call MPI_Irecv(rbufs, 2, vtype, left, 13, MPI_COMM_WORLD, reqs(1))
  call MPI_Send(sc, 5, MPI_DOUBLE_PRECISION, right, 13, MPI_COMM_WORLD, ierr)
  call MPI_Wait(reqs(1), status, ierr)
  call check_status(status, 13, vtype, MPI_UNDEFINED, 5, 'partial vector')
  do i = 1, 5
    call check(rbufs(2 * i - 1, 1) == left * 1000 + 500 + i, 'partial vector data')
    call check(rbufs(2 * i, 1) == -1, 'partial vector gap')
  end do
  call check(rbufs(11, 1) == -1, 'partial vector: nothing past the message')

  ! ---- Waitany / Testany with null entries; one message at a time --------------------------
  do k = 1, 2
    rbufs = -1
    do i = 1, 3
      sbufs(:, i) = rank * 1000 + 100 * i + [(dble(k), idx = 1, 2 * n)]
    end do
    reqs(2) = MPI_REQUEST_NULL
    call MPI_Irecv(rbufs(:, 1), 1, vtype, left, 20 + 1, MPI_COMM_WORLD, reqs(1))
    call MPI_Irecv(rbufs(:, 3), n, MPI_DOUBLE_PRECISION, left, 20 + 3, MPI_COMM_WORLD, reqs(3))
    order = [3, 1]
    do i = 1, 2
      if (order(i) == 1) then
        call MPI_Isend(sbufs(:, 1), n, MPI_DOUBLE_PRECISION, right, 21, MPI_COMM_WORLD, sreq)
      else
        call MPI_Isend(sbufs(:, 3), 1, vtype, right, 23, MPI_COMM_WORLD, sreq)
      end if
      if (k == 1) then
        call MPI_Waitany(3, reqs, idx, status, ierr)
      else
        flag = .false.
        do while (.not. flag)
          call MPI_Testany(3, reqs, idx, flag, status, ierr)
        end do
      end if
      idx = idx + ioff
      call check(idx == order(i), 'any: completed index')
      if (idx == 1) then
        call check_status(status, 21, vtype, 1, n, 'any: vector receive')
        call check(all(rbufs(1:2 * n:2, 1) == left * 1000 + 100 + k), 'any: vector data')
        call check(all(rbufs(2:2 * n:2, 1) == -1), 'any: vector gaps')
      else if (idx == 3) then
        call check_status(status, 23, MPI_DOUBLE_PRECISION, n, n, 'any: contiguous receive')
        call check(all(rbufs(1:n, 3) == left * 1000 + 300 + k), 'any: contiguous data')
      end if
      call MPI_Wait(sreq, MPI_STATUS_IGNORE, ierr)
      call MPI_Sendrecv(k, 0, MPI_INTEGER, left, ack, i, 0, MPI_INTEGER, right, ack, MPI_COMM_WORLD, &
                        MPI_STATUS_IGNORE, ierr)
    end do
    call MPI_Waitany(3, reqs, idx, status, ierr)
    call check(undefined_index(idx), 'waitany on inactive requests')
    call MPI_Testany(3, reqs, idx, flag, status, ierr)
    call check(flag .and. undefined_index(idx), 'testany on inactive requests')
  end do

  call MPI_Type_free(vtype, ierr)
  call MPI_Allreduce(errs, total, 1, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD, ierr)
  call MPI_Allreduce(checks, tchecks, 1, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD, ierr)
  if (rank == 0) then
    if (total == 0) then
      print '(a,i0,a)', 'p2p_conf_f08: OK (', tchecks, ' checks)'
    else
      print '(a,i0,a,i0,a)', 'p2p_conf_f08: FAILED (', total, ' of ', tchecks, ' checks failed)'
    end if
  end if
  call MPI_Finalize(ierr)
  if (total /= 0) stop 1

contains

  logical function undefined_index(i)
    integer, intent(in) :: i
    undefined_index = i == MPI_UNDEFINED .or. (is_mpich .and. i == MPI_UNDEFINED + 1)
  end function undefined_index

  subroutine check(ok, what)
    logical, intent(in) :: ok
    character(len=*), intent(in) :: what
    checks = checks + 1
    if (.not. ok) then
      errs = errs + 1
      write (0, '(a,i0,2a)') 'rank ', rank, ': p2p_conf.f90: check failed: ', what
    end if
  end subroutine check

  subroutine check_status(st, tag, dtype, count, elements, what)
    type(MPI_Status), intent(in) :: st
    integer, intent(in) :: tag, count, elements
    type(MPI_Datatype), intent(in) :: dtype
    character(len=*), intent(in) :: what
    integer :: c, e
    call MPI_Get_count(st, dtype, c)
    call MPI_Get_elements(st, dtype, e)
    call check(st%MPI_SOURCE == left, what // ': status source')
    call check(st%MPI_TAG == tag, what // ': status tag')
    call check(c == count, what // ': MPI_Get_count')
    call check(e == elements, what // ': MPI_Get_elements')
  end subroutine check_status

end program p2p_conf
