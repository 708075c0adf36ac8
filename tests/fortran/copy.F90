! sluice's copy API from Fortran (`use sluice`, include/sluice.f90), each rank on its own data:
! a transpose by layout conversion in memory; a file round trip (contiguous out, transposing
! in; the second copy completed by sluice_event_test); sluice_plan_explain; the errors a
! Fortran caller can make (sizes that differ, a file that cannot be opened, bad flags), each
! leaving the event null. Prints PASS on rank 0 when every rank passed.
include '../../include/sluice.f90'

program copy_f
    use mpi
    use sluice
    use, intrinsic :: iso_c_binding
    implicit none
    integer, parameter :: n = 300, m = 200
    real(8), target :: a(n, m), b(m, n), c(m, n)
    integer :: ierr, rank, col, rowt, i, j, fd, errs, total, rc, polls
    integer(kind=MPI_ADDRESS_KIND) :: lb, ext
    type(c_ptr) :: ev
    type(sluice_place) :: src, dst
    character(len=4000) :: text
    character(len=64) :: fname
    logical :: done

    call MPI_Init(ierr)
    call MPI_Comm_rank(MPI_COMM_WORLD, rank, ierr)
    errs = 0
    ev = c_null_ptr
    do j = 1, m
        do i = 1, n
            a(i, j) = i + 1000d0 * j + 1d7 * rank
        end do
    end do
    ! a's column j (n doubles) lands in b's row j: n doubles m apart; one such row per element
    call MPI_Type_vector(n, 1, m, MPI_DOUBLE_PRECISION, col, ierr)
    lb = 0
    ext = 8
    call MPI_Type_create_resized(col, lb, ext, rowt, ierr)
    call MPI_Type_commit(rowt, ierr)

    ! 1. transpose in memory
    b = -1
    src = sluice_host(c_loc(a), int(n * m, c_int64_t), MPI_DOUBLE_PRECISION)
    dst = sluice_host(c_loc(b), int(m, c_int64_t), rowt)
    call expect(sluice_copy(src, dst, 0, ev), SLUICE_SUCCESS, 'sluice_copy (memory)')
    call expect(sluice_event_wait(ev), SLUICE_SUCCESS, 'sluice_event_wait')
    if (c_associated(ev)) call fail('the event is not null after sluice_event_wait')
    do j = 1, m
        do i = 1, n
            if (b(j, i) /= a(i, j)) errs = errs + 1
        end do
    end do
    if (errs > 0) print *, 'rank', rank, ': transpose in memory wrong at', errs, 'elements'

    ! 2. file round trip: a out contiguous, back in transposed
    write (fname, '(a,i0,a)') '/tmp/sluice_copy_f_', rank, '.bin'
    fd = sluice_file_open(fname, SLUICE_FILE_CREATE)
    if (fd < 0) call fail('sluice_file_open')
    dst = sluice_file(fd, 0_c_int64_t, int(n * m, c_int64_t), MPI_DOUBLE_PRECISION)
    call expect(sluice_copy(src, dst, 1, ev), SLUICE_SUCCESS, 'sluice_copy (to the file)')
    call expect(sluice_event_wait(ev), SLUICE_SUCCESS, 'sluice_event_wait (to the file)')
    c = -1
    src = dst
    dst = sluice_host(c_loc(c), int(m, c_int64_t), rowt)
    total = sluice_plan_explain(src, dst, text)
    if (total <= 0 .or. index(text, 'DiskRead') == 0) call fail('sluice_plan_explain: '//trim(text))
    call expect(sluice_copy(src, dst, 0, ev), SLUICE_SUCCESS, 'sluice_copy (from the file)')
    done = .false.
    polls = 0
    do while (.not. done)
        call expect(sluice_event_test(ev, done), SLUICE_SUCCESS, 'sluice_event_test')
        polls = polls + 1
    end do
    if (c_associated(ev)) call fail('the event is not null after sluice_event_test')
    if (any(c /= b)) call fail('the file round trip changed the data')

    ! 3. errors: nothing starts, the event stays null
    dst = sluice_host(c_loc(c), int(m - 1, c_int64_t), rowt)
    call expect(sluice_copy(src, dst, 0, ev), SLUICE_ERR_SIZE, 'sluice_copy of different sizes')
    if (c_associated(ev)) call fail('an event was made by a refused copy')
    call expect(sluice_file_open('/nonexistent-dir/x.bin', SLUICE_FILE_READ), SLUICE_ERR_IO, 'sluice_file_open of a missing file')
    call expect(sluice_file_open(fname, 0), SLUICE_ERR_ARG, 'sluice_file_open with no flags')
    call expect(sluice_file_close(fd), SLUICE_SUCCESS, 'sluice_file_close')
    call expect(sluice_file_close(fd), SLUICE_ERR_IO, 'sluice_file_close twice')
    open (unit=11, file=fname, status='old')
    close (unit=11, status='delete')

    call MPI_Type_free(rowt, ierr)
    call MPI_Type_free(col, ierr)
    call MPI_Allreduce(MPI_IN_PLACE, errs, 1, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD, ierr)
    if (rank == 0 .and. errs == 0) print '(a)', 'PASS'
    if (rank == 0 .and. errs /= 0) print *, 'FAIL:', errs, 'errors'
    call MPI_Finalize(ierr)

contains

    subroutine expect(got, want, what)
        integer, intent(in) :: got, want
        character(len=*), intent(in) :: what
        if (got /= want) then
            print *, 'rank', rank, ': ', what, ' returned', got, ', expected', want
            errs = errs + 1
        end if
    end subroutine

    subroutine fail(what)
        character(len=*), intent(in) :: what
        print *, 'rank', rank, ': ', what
        errs = errs + 1
    end subroutine

end program
