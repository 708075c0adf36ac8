! What sluice's interception costs a Fortran program (`use mpi`): the calls of bench/overhead.c's
! "call" mode, made from Fortran. On Open MPI its Fortran bindings call PMPI_* directly, so
! sluice exports the Fortran entry points itself (src/intercept/fortran); on MPICH `use mpi`
! calls the C MPI_* symbols, which sluice intercepts.
!
!   overhead_f TRIALS CALLS     (1 process) prints "shim 0|1" and "call F:<name> <trial> <ns>"
!
! MPI_Test on MPI_REQUEST_NULL, MPI_Get_count on a status of a completed self-message, MPI_Iprobe
! on MPI_COMM_SELF with nothing pending (a quarter of the calls: slower per call), and an 8-byte
! MPI_Sendrecv to self on MPI_COMM_SELF (a tenth of the calls; a blocking MPI_Send to self may
! wait for its receive forever, and does on MPICH).
program overhead_f
    use mpi
    use, intrinsic :: iso_c_binding
    implicit none
    interface
        ! RTLD_DEFAULT is the null handle on glibc: finds sluice's symbols when it is preloaded.
        function dlsym(handle, name) bind(c, name="dlsym")
            import :: c_ptr, c_char
            type(c_ptr), value :: handle
            character(kind=c_char), dimension(*) :: name
            type(c_ptr) :: dlsym
        end function dlsym
    end interface
    integer :: ierr, trials, t, k
    integer(kind=8) :: calls
    character(len=32) :: arg
    character(len=16) :: names(4)
    integer(kind=8) :: scale(4)

    call MPI_Init(ierr)
    trials = 3
    calls = 2000000
    if (command_argument_count() >= 1) then
        call get_command_argument(1, arg)
        read (arg, *) trials
    end if
    if (command_argument_count() >= 2) then
        call get_command_argument(2, arg)
        read (arg, *) calls
    end if
    if (c_associated(dlsym(c_null_ptr, "sluice_version_string"//c_null_char))) then
        print '(a)', 'shim 1'
    else
        print '(a)', 'shim 0'
    end if
    names = [character(len=16) :: 'MPI_Test', 'MPI_Get_count', 'MPI_Iprobe', 'MPI_Sendrecv']
    scale = [1_8, 1_8, 4_8, 10_8]
    do k = 1, 4
        call timed(k, calls/scale(k)/4 + 1000, .false., 0)  ! warm-up
        do t = 0, trials - 1
            call timed(k, calls/scale(k), .true., t)
        end do
    end do
    call MPI_Finalize(ierr)

contains

    subroutine timed(which, n, report, trial)
        integer, intent(in) :: which, trial
        integer(kind=8), intent(in) :: n
        logical, intent(in) :: report
        integer :: req, cnt, ierr2, acc
        integer :: st(MPI_STATUS_SIZE), self_st(MPI_STATUS_SIZE)
        logical :: flag
        integer(kind=1) :: sbuf(8), rbuf(8)
        integer(kind=8) :: i
        double precision :: t0, ns

        sbuf = 1
        call MPI_Sendrecv(sbuf, 8, MPI_BYTE, 0, 9, rbuf, 8, MPI_BYTE, 0, 9, MPI_COMM_SELF, self_st, ierr2)
        acc = 0
        t0 = MPI_Wtime()
        select case (which)
        case (1)
            do i = 1, n
                req = MPI_REQUEST_NULL
                call MPI_Test(req, flag, st, ierr2)
                if (flag) acc = acc + 1
            end do
        case (2)
            do i = 1, n
                call MPI_Get_count(self_st, MPI_BYTE, cnt, ierr2)
                acc = acc + cnt
            end do
        case (3)
            do i = 1, n
                call MPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_SELF, flag, st, ierr2)
                if (flag) acc = acc + 1
            end do
        case (4)
            do i = 1, n
                call MPI_Sendrecv(sbuf, 8, MPI_BYTE, 0, 7, rbuf, 8, MPI_BYTE, 0, 7, MPI_COMM_SELF, st, ierr2)
                acc = acc + int(rbuf(1))
            end do
        end select
        ns = (MPI_Wtime() - t0)*1d9/dble(n)
        if (acc < 0) print *, acc  ! keeps the loops
        if (report) print '(a,a,1x,i0,1x,f0.3)', 'call F:', trim(names(which)), trial, ns
    end subroutine timed
end program overhead_f
