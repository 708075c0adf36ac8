! MPI_INIT_THREAD and MPI_QUERY_THREAD from Fortran: under SLUICE_PROGRESS_THREAD=1 sluice runs
! the MPI at MPI_THREAD_MULTIPLE, yet both must answer the level asked for (MPI_THREAD_FUNNELED),
! as the bare MPI does. -DF08: the mpi_f08 module, else the mpi module.
program query_thread
#ifdef F08
  use mpi_f08
#else
  use mpi
#endif
  implicit none
  integer :: provided, q, rank, ierr
  call MPI_INIT_THREAD(MPI_THREAD_FUNNELED, provided, ierr)
  call MPI_QUERY_THREAD(q, ierr)
  call MPI_COMM_RANK(MPI_COMM_WORLD, rank, ierr)
  if (rank == 0) then
    if (provided == MPI_THREAD_FUNNELED .and. q == MPI_THREAD_FUNNELED) then
      print '(a)', 'PASS query_thread'
    else
      print '(a,i0,a,i0)', 'FAIL query_thread: provided=', provided, ' query=', q
    end if
  end if
  call MPI_FINALIZE(ierr)
end program query_thread
