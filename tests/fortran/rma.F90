! One-sided puts and gets from Fortran (`use sluice`, include/sluice.f90): every rank puts a
! block of integers into its right neighbour's array (at its own offset), gets its left
! neighbour's block back from that neighbour, and checks the error codes of a bad rank.
include '../../include/sluice.f90'

program rma
    use mpi
    use sluice
    use, intrinsic :: iso_c_binding
    implicit none
    integer, parameter :: n = 5000
    integer(c_int32_t), target, allocatable :: win(:), mine(:), back(:)
    integer(c_int64_t), allocatable :: bases(:)
    integer(c_int64_t) :: base, remote
    integer :: ierr, rank, nproc, provided, right, left, i, bad
    type(c_ptr) :: ev

    call MPI_Init_thread(MPI_THREAD_MULTIPLE, provided, ierr)
    call MPI_Comm_rank(MPI_COMM_WORLD, rank, ierr)
    call MPI_Comm_size(MPI_COMM_WORLD, nproc, ierr)
    allocate(win(n * nproc), mine(n), back(n), bases(nproc))
    win = -1
    bad = 0
    if (sluice_rma_init() /= SLUICE_SUCCESS) bad = bad + 1
    base = transfer(c_loc(win(1)), base)
    call MPI_Allgather(base, 1, MPI_INTEGER8, bases, 1, MPI_INTEGER8, MPI_COMM_WORLD, ierr)
    right = mod(rank + 1, nproc)
    left = mod(rank + nproc - 1, nproc)
    do i = 1, n
        mine(i) = rank * 100000 + i
    end do
    ! Our block of the right neighbour's array starts at element rank * n + 1.
    remote = bases(right + 1) + int(rank, c_int64_t) * n * 4
    if (sluice_put(right, remote, c_loc(mine(1)), int(n * 4, c_int64_t), ev) /= SLUICE_SUCCESS) bad = bad + 1
    if (sluice_event_wait(ev) /= SLUICE_SUCCESS) bad = bad + 1
    call MPI_Barrier(MPI_COMM_WORLD, ierr)
    do i = 1, n
        if (win(left * n + i) /= left * 100000 + i) bad = bad + 1
    end do
    ! Read back, from the left neighbour, the block the rank left of it put there.
    remote = bases(left + 1) + int(mod(left + nproc - 1, nproc), c_int64_t) * n * 4
    if (sluice_get(left, remote, c_loc(back(1)), int(n * 4, c_int64_t), ev) /= SLUICE_SUCCESS) bad = bad + 1
    if (sluice_event_wait(ev) /= SLUICE_SUCCESS) bad = bad + 1
    do i = 1, n
        if (back(i) /= mod(left + nproc - 1, nproc) * 100000 + i) bad = bad + 1
    end do
    if (sluice_put(nproc, remote, c_loc(mine(1)), 4_8, ev) /= SLUICE_ERR_ARG) bad = bad + 1
    call MPI_Allreduce(MPI_IN_PLACE, bad, 1, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD, ierr)
    if (rank == 0) then
        if (bad == 0) then
            print '(a)', 'PASS'
        else
            print '(a,i0)', 'FAIL ', bad
        end if
    end if
    call MPI_Finalize(ierr)
end program rma
