! The multi-level runtime from Fortran (`use sluice_levels`, include/sluice_levels.f90), on the
! composition in SLUICE_LEVELS: the top allocates and registers a real(8) array; Fortran tasks on
! every child write their share with a put from a local array, read it back with a get (whole and
! strided, runs of two), meet at a barrier, check the error codes of bad calls, and open the level
! below (where there is one) to hand their share down to its children. Error counts go into a
! slot per child (children of smp and disk levels are threads of this process); rank 0 prints
! PASS or FAIL <count> after summing over the ranks.
include '../../include/sluice_levels.f90'

module levels_checks
    use sluice_levels
    use, intrinsic :: iso_c_binding
    use, intrinsic :: iso_fortran_env, only: error_unit
    implicit none
    integer(c_size_t), parameter :: N = 100000
    integer(c_int64_t), parameter :: D_A = 1, D_B = 2, D_C = 3
    integer(c_int), parameter :: T_PUT = 0, T_GET = 1, T_NESTED = 2, NTASKS = 3
    ! Slots: a top-level call's children use slot0 = 0 (slot = id); a child at slot s calls the
    ! level below with slot0 = (s + 1) * FAN, so no two children running at once share a slot.
    integer, parameter :: FAN = 64, NSLOTS = FAN * (FAN + 1)
    integer :: errs(0:NSLOTS - 1)
    integer(c_int64_t) :: checked(0:NSLOTS - 1)

    ! The argument block of every task: the array's length at this level, its first element's
    ! index in the top array, and the slot base.
    type, bind(C) :: job_t
        integer(c_int64_t) :: n, base, slot0
    end type

contains

    ! Element i (0-based, of the top array) after T_PUT.
    pure real(c_double) function val(i)
        integer(c_int64_t), intent(in) :: i
        val = real(mod(i, 1000_c_int64_t), c_double) * 0.5d0 + real(i / 1000, c_double)
    end function

    recursive subroutine expect(rc, code, what, nbad)
        integer(c_int), intent(in) :: rc
        integer, intent(in) :: code
        character(len=*), intent(in) :: what
        integer, intent(inout) :: nbad
        if (rc /= code) then
            nbad = nbad + 1
            write(error_unit, '(a,a,a,i0,a,i0)') 'levels.F90: ', what, ' returned ', rc, ', expected ', code
        end if
    end subroutine

    recursive subroutine check(cond, what, nbad)
        logical, intent(in) :: cond
        character(len=*), intent(in) :: what
        integer, intent(inout) :: nbad
        if (.not. cond) then
            nbad = nbad + 1
            write(error_unit, '(a,a)') 'levels.F90: failed: ', what
        end if
    end subroutine

    ! This child's share lo .. lo+m-1 (0-based) of a length-n array over `sib` children.
    recursive subroutine share(n, id, sib, lo, m)
        integer(c_int64_t), intent(in) :: n
        integer, intent(in) :: id, sib
        integer(c_size_t), intent(out) :: lo, m
        lo = int(n * id / sib, c_size_t)
        m = int(n * (id + 1) / sib, c_size_t) - lo
    end subroutine

    recursive subroutine record(slot, nbad, nchecked)
        integer(c_int64_t), intent(in) :: slot
        integer, intent(in) :: nbad
        integer(c_int64_t), intent(in) :: nchecked
        if (slot < 0 .or. slot >= NSLOTS) then
            write(error_unit, '(a,i0)') 'levels.F90: slot out of range: ', slot
            errs(0) = errs(0) + 1 + nbad ! racy, but only reached on a failure anyway
            return
        end if
        errs(slot) = errs(slot) + nbad
        checked(slot) = checked(slot) + nchecked
    end subroutine

    ! Task 0: write this child's share of D_A from a local Fortran array (one put run).
    recursive subroutine task_put(level, arg, arg_len) bind(C)
        type(c_ptr), value :: level, arg
        integer(c_size_t), value :: arg_len
        type(job_t), pointer :: job
        real(c_double), allocatable, target :: buf(:)
        type(sluice_array_t) :: a, local
        type(c_ptr) :: list, x
        integer(c_size_t) :: lo, m, k
        integer :: nbad, id, sib
        nbad = 0
        call check(arg_len == c_sizeof(job), 'argument length', nbad)
        call c_f_pointer(arg, job)
        id = sluice_level_id(level)
        sib = sluice_level_siblings(level)
        call check(id >= 0 .and. id < sib, 'child id in range', nbad)
        call share(job%n, id, sib, lo, m)
        allocate(buf(m))
        do k = 1, m
            buf(k) = val(job%base + int(lo + k - 1, c_int64_t))
        end do
        call expect(sluice_array_get(level, D_A, a), SLUICE_SUCCESS, 'sluice_array_get', nbad)
        call check(a%desc == D_A .and. a%ndims == 1 .and. a%dims(1) == job%n .and. a%elem_size == 8, &
                   'registered array as described', nbad)
        call expect(sluice_array_local(c_loc(buf), c_sizeof(buf(1)), [m], local), SLUICE_SUCCESS, 'sluice_array_local', nbad)
        call check(local%desc == SLUICE_ARRAY_LOCAL_DESC, 'local descriptor', nbad)
        list = c_null_ptr
        x = c_null_ptr
        call expect(sluice_xfer_list_create(level, a, local, [lo], [0_c_size_t], [m], list), SLUICE_SUCCESS, 'put list', nbad)
        call expect(sluice_xfer(level, list, x), SLUICE_SUCCESS, 'sluice_xfer put', nbad)
        call expect(sluice_xfer_wait(level, x), SLUICE_SUCCESS, 'sluice_xfer_wait put', nbad)
        call check(.not. c_associated(x), 'transfer handle reset', nbad)
        call expect(sluice_xfer_list_free(list), SLUICE_SUCCESS, 'sluice_xfer_list_free', nbad)
        call check(.not. c_associated(list), 'list handle reset', nbad)
        deallocate(buf)
        call record(job%slot0 + id, nbad, 0_c_int64_t)
    end subroutine

    ! Task 1: read the share back (one get run), then a strided get (runs of 2 elements, every
    ! 7th, packed locally), a barrier, and the error codes of bad calls on a child's handle.
    recursive subroutine task_get(level, arg, arg_len) bind(C)
        type(c_ptr), value :: level, arg
        integer(c_size_t), value :: arg_len
        type(job_t), pointer :: job
        real(c_double), allocatable, target :: back(:)
        integer(c_size_t), allocatable :: di(:), si(:), ln(:)
        type(sluice_array_t) :: a, local, other
        type(c_ptr) :: list, x, t
        integer(c_size_t) :: lo, m, k, i, runs
        integer :: nbad, id, sib, wrong
        nbad = 0
        call check(arg_len == c_sizeof(job), 'argument length', nbad)
        call c_f_pointer(arg, job)
        id = sluice_level_id(level)
        sib = sluice_level_siblings(level)
        call share(job%n, id, sib, lo, m)
        allocate(back(m))
        back = -1
        list = c_null_ptr
        x = c_null_ptr
        call expect(sluice_array_get(level, D_A, a), SLUICE_SUCCESS, 'sluice_array_get', nbad)
        call expect(sluice_array_local(c_loc(back), c_sizeof(back(1)), [m], local), SLUICE_SUCCESS, 'sluice_array_local', nbad)
        call expect(sluice_xfer_list_create(level, local, a, [0_c_size_t], [lo], [m], list), SLUICE_SUCCESS, 'get list', nbad)
        call expect(sluice_xfer(level, list, x), SLUICE_SUCCESS, 'sluice_xfer get', nbad)
        call expect(sluice_xfer_wait(level, x), SLUICE_SUCCESS, 'sluice_xfer_wait get', nbad)
        call expect(sluice_xfer_list_free(list), SLUICE_SUCCESS, 'sluice_xfer_list_free', nbad)
        wrong = 0
        do k = 1, m
            if (back(k) /= val(job%base + int(lo + k - 1, c_int64_t))) wrong = wrong + 1
        end do
        call check(wrong == 0, 'values read back', nbad)
        ! Strided: runs i = 0 .. runs-1 of 2 elements from lo + 7i into back(2i+1 : 2i+2).
        runs = (m - 2) / 7 + 1
        allocate(di(runs), si(runs), ln(runs))
        do i = 0, runs - 1
            di(i + 1) = 2 * i
            si(i + 1) = lo + 7 * i
            ln(i + 1) = 2
        end do
        back = -1
        call expect(sluice_xfer_list_create(level, local, a, di, si, ln, list), SLUICE_SUCCESS, 'strided list', nbad)
        call expect(sluice_xfer(level, list, x), SLUICE_SUCCESS, 'sluice_xfer strided', nbad)
        call expect(sluice_xfer_wait(level, x), SLUICE_SUCCESS, 'sluice_xfer_wait strided', nbad)
        call expect(sluice_xfer_list_free(list), SLUICE_SUCCESS, 'sluice_xfer_list_free', nbad)
        wrong = 0
        do i = 0, runs - 1
            if (back(2 * i + 1) /= val(job%base + int(lo + 7 * i, c_int64_t))) wrong = wrong + 1
            if (back(2 * i + 2) /= val(job%base + int(lo + 7 * i + 1, c_int64_t))) wrong = wrong + 1
        end do
        if (2 * runs < m) then
            if (any(back(2 * runs + 1:) /= -1)) wrong = wrong + 1
        end if
        call check(wrong == 0, 'strided values', nbad)
        call expect(sluice_level_barrier(level, 0, sib), SLUICE_SUCCESS, 'sluice_level_barrier', nbad)
        ! Bad calls: nothing is written, each refused with its code.
        back = -1
        call expect(sluice_xfer_list_create(level, local, a, [0_c_size_t], [int(job%n, c_size_t)], [1_c_size_t], list), &
                    SLUICE_LEVELS_ERR_BOUNDS, 'a get past the end of the top array', nbad)
        call expect(sluice_xfer_list_create(level, local, a, [m - 1], [0_c_size_t], [2_c_size_t], list), &
                    SLUICE_LEVELS_ERR_BOUNDS, 'a get past the end of the local array', nbad)
        call check(.not. c_associated(list), 'no list on error', nbad)
        call expect(sluice_xfer_list_create(level, local, a, [0_c_size_t, 1_c_size_t], [0_c_size_t], [1_c_size_t], list), &
                    SLUICE_ERR_ARG, 'index lists of different sizes', nbad)
        call expect(sluice_array_get(level, 999_c_int64_t, other), SLUICE_LEVELS_ERR_DESC, 'an unknown descriptor', nbad)
        call expect(sluice_array_get(level, D_B, other), SLUICE_LEVELS_ERR_DESC, 'an array allocated, not added', nbad)
        call expect(sluice_array_alloc(level, 8_c_size_t, [4_c_size_t], 50_c_int64_t, 0_c_size_t, other), &
                    SLUICE_LEVELS_ERR_ROLE, 'sluice_array_alloc on a child handle', nbad)
        t = c_null_ptr
        call expect(sluice_task_call(level, T_PUT, 0, 1, c_null_ptr, 0_c_size_t, t), SLUICE_LEVELS_ERR_ROLE, &
                    'sluice_task_call on a child handle', nbad)
        call expect(sluice_level_barrier(level, 0, sib + 1), SLUICE_LEVELS_ERR_CHILD, 'a barrier past the children', nbad)
        call check(all(back == -1), 'nothing written by refused calls', nbad)
        call check(sluice_level_kind(level) /= '', 'a child handle has a kind', nbad)
        deallocate(back, di, si, ln)
        call record(job%slot0 + id, nbad, 0_c_int64_t)
    end subroutine

    ! Task 2: open the level below; a leaf checks its share itself, else it allocates its share
    ! below, pulls it there, registers it and has the children below do the same.
    recursive subroutine task_nested(level, arg, arg_len) bind(C)
        type(c_ptr), value :: level, arg
        integer(c_size_t), value :: arg_len
        type(job_t), pointer :: job
        type(job_t), target :: sub
        real(c_double), allocatable, target :: buf(:)
        real(c_double), pointer :: part_data(:)
        type(sluice_array_t) :: a, local, part
        type(sluice_level_stats_t) :: st
        type(c_ptr) :: below, list, x, t
        integer(c_size_t) :: lo, m, k
        integer(c_int64_t) :: slot
        integer :: nbad, id, sib, wrong
        nbad = 0
        call check(arg_len == c_sizeof(job), 'argument length', nbad)
        call c_f_pointer(arg, job)
        id = sluice_level_id(level)
        sib = sluice_level_siblings(level)
        slot = job%slot0 + id
        call share(job%n, id, sib, lo, m)
        list = c_null_ptr
        x = c_null_ptr
        below = c_null_ptr
        call expect(sluice_array_get(level, D_A, a), SLUICE_SUCCESS, 'sluice_array_get', nbad)
        call expect(sluice_level_below(level, below), SLUICE_SUCCESS, 'sluice_level_below', nbad)
        if (c_associated(below)) then
            call check(sluice_level_memory(below) /= 0, 'memory below', nbad)
            call check(sluice_level_id(below) == -1, 'the level below is a top', nbad)
            call expect(sluice_array_alloc(below, 8_c_size_t, [m], D_A, 0_c_size_t, part), SLUICE_SUCCESS, 'alloc below', nbad)
            if (.not. c_associated(part%data)) then
                ! A file level below: reached only by its own children; check as a leaf.
                call expect(sluice_array_free(below, part), SLUICE_SUCCESS, 'free below', nbad)
                call expect(sluice_level_close(below), SLUICE_SUCCESS, 'close below', nbad)
            end if
        end if
        if (.not. c_associated(below)) then
            allocate(buf(m))
            buf = -1
            call expect(sluice_array_local(c_loc(buf), 8_c_size_t, [m], local), SLUICE_SUCCESS, 'sluice_array_local', nbad)
            call expect(sluice_xfer_list_create(level, local, a, [0_c_size_t], [lo], [m], list), SLUICE_SUCCESS, 'leaf list', nbad)
            call expect(sluice_xfer(level, list, x), SLUICE_SUCCESS, 'sluice_xfer leaf', nbad)
            call expect(sluice_xfer_wait(level, x), SLUICE_SUCCESS, 'sluice_xfer_wait leaf', nbad)
            call expect(sluice_xfer_list_free(list), SLUICE_SUCCESS, 'sluice_xfer_list_free', nbad)
            wrong = 0
            do k = 1, m
                if (buf(k) /= val(job%base + int(lo + k - 1, c_int64_t))) wrong = wrong + 1
            end do
            call check(wrong == 0, 'leaf values', nbad)
            deallocate(buf)
            call record(slot, nbad, int(m, c_int64_t))
            return
        end if
        ! The level below's top memory is this child's: part%data is addressable here.
        call expect(sluice_array_local(part%data, 8_c_size_t, [m], local), SLUICE_SUCCESS, 'local over part', nbad)
        call expect(sluice_xfer_list_create(level, local, a, [0_c_size_t], [lo], [m], list), SLUICE_SUCCESS, 'share list', nbad)
        call expect(sluice_xfer(level, list, x), SLUICE_SUCCESS, 'sluice_xfer share', nbad)
        call expect(sluice_xfer_wait(level, x), SLUICE_SUCCESS, 'sluice_xfer_wait share', nbad)
        call expect(sluice_xfer_list_free(list), SLUICE_SUCCESS, 'sluice_xfer_list_free', nbad)
        call c_f_pointer(part%data, part_data, [m])
        wrong = 0
        do k = 1, m
            if (part_data(k) /= val(job%base + int(lo + k - 1, c_int64_t))) wrong = wrong + 1
        end do
        call check(wrong == 0, 'share values below', nbad)
        call expect(sluice_array_add(below, part), SLUICE_SUCCESS, 'add below', nbad)
        sub%n = int(m, c_int64_t)
        sub%base = job%base + int(lo, c_int64_t)
        sub%slot0 = (slot + 1) * FAN
        t = c_null_ptr
        call expect(sluice_task_call(below, T_NESTED, 0, sluice_level_siblings(below), c_loc(sub), c_sizeof(sub), t), &
                    SLUICE_SUCCESS, 'task call below', nbad)
        call expect(sluice_task_wait(below, t), SLUICE_SUCCESS, 'task wait below', nbad)
        call expect(sluice_level_stats(below, st), SLUICE_SUCCESS, 'stats below', nbad)
        call check(st%tasks == sluice_level_siblings(below), 'tasks run below', nbad)
        call expect(sluice_array_free(below, part), SLUICE_SUCCESS, 'free below', nbad)
        call expect(sluice_level_close(below), SLUICE_SUCCESS, 'close below', nbad)
        call check(.not. c_associated(below), 'close resets the handle', nbad)
        call record(slot, nbad, 0_c_int64_t)
    end subroutine

end module levels_checks

program levels
    use mpi
    use sluice_levels
    use levels_checks
    use, intrinsic :: iso_c_binding
    implicit none
    type(c_funptr) :: tasks(NTASKS)
    type(c_ptr) :: top, t, below
    type(sluice_array_t) :: a, b, got
    type(sluice_level_stats_t) :: st
    type(job_t), target :: job
    character(kind=c_char), target :: big(SLUICE_TASK_ARG_MAX + 1)
    character(len=256) :: spec
    character(len=:), allocatable :: top_kind, top_spec
    real(c_double), pointer :: x(:)
    integer(c_size_t) :: i
    integer :: ierr, rank, provided, bad, nch, wrong, cut, total, mine, home, want

    call MPI_Init_thread(MPI_THREAD_MULTIPLE, provided, ierr)
    call MPI_Comm_rank(MPI_COMM_WORLD, rank, ierr)
    errs = 0
    checked = 0
    bad = 0
    spec = ''
    call get_environment_variable('SLUICE_LEVELS', spec)
    if (spec == '') spec = 'smp'
    ! The top level pair's part of the composition, and its kind.
    cut = index(spec, '/')
    if (cut == 0) cut = len_trim(spec) + 1
    top_spec = spec(1:cut - 1)
    cut = scan(top_spec, ':@')
    top_kind = top_spec
    if (cut > 0) top_kind = top_spec(1:cut - 1)
    tasks = [c_funloc(task_put), c_funloc(task_get), c_funloc(task_nested)]

    ! Compositions given as Fortran strings; a bad one; a memory bound.
    call expect(sluice_levels_open('tape', tasks, top), SLUICE_LEVELS_ERR_SPEC, 'open "tape"', bad)
    call expect(sluice_levels_open('smp:0', tasks, top), SLUICE_LEVELS_ERR_SPEC, 'open "smp:0"', bad)
    call check(.not. c_associated(top), 'no handle on error', bad)
    call expect(sluice_levels_open('smp:1@1K', tasks, top), SLUICE_SUCCESS, 'open "smp:1@1K"', bad)
    call check(sluice_level_kind(top) == 'smp', 'kind smp', bad)
    call expect(sluice_array_alloc(top, 8_c_size_t, [100_c_size_t], 1_c_int64_t, 0_c_size_t, a), SLUICE_SUCCESS, 'alloc 800', bad)
    call check(sluice_level_memory(top) == 1024 - 800, 'memory left', bad)
    call expect(sluice_array_alloc(top, 8_c_size_t, [100_c_size_t], 2_c_int64_t, 0_c_size_t, b), &
                SLUICE_LEVELS_ERR_NOMEM, 'alloc past the bound', bad)
    call expect(sluice_level_close(top), SLUICE_SUCCESS, 'close', bad)
    call check(sluice_level_kind(top) == '', 'no kind for a null handle', bad)

    ! The composition under test ('' = SLUICE_LEVELS).
    call expect(sluice_levels_open('', tasks, top), SLUICE_SUCCESS, 'sluice_levels_open', bad)
    if (c_associated(top)) then
        nch = sluice_level_siblings(top)
        call check(nch >= 1, 'children', bad)
        call check(sluice_level_id(top) == -1, 'a top has id -1', bad)
        call check(sluice_level_kind(top) == top_kind, 'kind '//top_kind//' (got '//sluice_level_kind(top)//')', bad)
        if (index(top_spec, '@') == 0) then
            call check(sluice_level_memory(top) == SLUICE_LEVELS_UNBOUNDED, 'no memory bound', bad)
        end if
        call expect(sluice_array_alloc(top, c_sizeof(0d0), [N], D_A, 0_c_size_t, a), SLUICE_SUCCESS, 'alloc A', bad)
        call check(a%desc == D_A .and. a%ndims == 1 .and. a%dims(1) == N .and. a%elem_size == 8, 'A described', bad)
        call expect(sluice_array_alloc(top, c_sizeof(0d0), [N], D_A, 0_c_size_t, got), SLUICE_LEVELS_ERR_DESC, &
                    'alloc under a descriptor in use', bad)
        call expect(sluice_array_alloc(top, 4_c_size_t, [10_c_size_t, 20_c_size_t], D_B, 4096_c_size_t, b), &
                    SLUICE_SUCCESS, 'alloc B (2-D, aligned)', bad)
        call check(b%ndims == 2 .and. b%dims(1) == 10 .and. b%dims(2) == 20 .and. b%dims(3) == 0, 'B described', bad)
        if (c_associated(b%data)) call check(mod(transfer(b%data, 0_c_intptr_t), 4096_c_intptr_t) == 0, 'B aligned', bad)
        call expect(sluice_array_add(top, a), SLUICE_SUCCESS, 'add A', bad)
        call expect(sluice_array_add(top, a), SLUICE_LEVELS_ERR_DESC, 'add A twice', bad)
        call expect(sluice_array_get(top, D_A, got), SLUICE_SUCCESS, 'get A', bad)
        call check(got%desc == D_A .and. got%dims(1) == N, 'get matches alloc', bad)
        if (c_associated(a%data)) then
            call check(c_associated(got%data, a%data), 'get gives the same address', bad)
        else
            call check(.not. c_associated(got%data), 'get gives no address', bad)
        end if
        call expect(sluice_array_get(top, 999_c_int64_t, got), SLUICE_LEVELS_ERR_DESC, 'get an unknown descriptor', bad)
        call expect(sluice_array_remove(top, 999_c_int64_t), SLUICE_LEVELS_ERR_DESC, 'remove an unknown descriptor', bad)
        call expect(sluice_level_barrier(top, 0, nch), SLUICE_LEVELS_ERR_ROLE, 'a barrier on the top handle', bad)
        call expect(sluice_level_below(top, below), SLUICE_LEVELS_ERR_ROLE, 'below from the top handle', bad)
        job%n = int(N, c_int64_t)
        job%base = 0
        job%slot0 = 0
        t = c_null_ptr
        call expect(sluice_task_call(top, T_PUT, 0, nch + 1, c_loc(job), c_sizeof(job), t), SLUICE_LEVELS_ERR_CHILD, &
                    'a task call past the children', bad)
        call expect(sluice_task_call(top, NTASKS, 0, nch, c_loc(job), c_sizeof(job), t), SLUICE_LEVELS_ERR_TASK, &
                    'an unknown task', bad)
        big = 'x'
        call expect(sluice_task_call(top, T_PUT, 0, nch, c_loc(big), c_sizeof(big), t), SLUICE_LEVELS_ERR_TASK, &
                    'an oversized argument', bad)
        call check(.not. c_associated(t), 'no task handle on error', bad)
        ! The work.
        call expect(sluice_task_call(top, T_PUT, 0, nch, c_loc(job), c_sizeof(job), t), SLUICE_SUCCESS, 'call put', bad)
        call expect(sluice_task_wait(top, t), SLUICE_SUCCESS, 'wait put', bad)
        call check(.not. c_associated(t), 'wait resets the handle', bad)
        if (c_associated(a%data)) then
            call c_f_pointer(a%data, x, [N])
            wrong = 0
            do i = 1, N
                if (x(i) /= val(int(i - 1, c_int64_t))) wrong = wrong + 1
            end do
            call check(wrong == 0, 'values at the top', bad)
        end if
        call expect(sluice_task_call(top, T_GET, 0, nch, c_loc(job), c_sizeof(job), t), SLUICE_SUCCESS, 'call get', bad)
        call expect(sluice_task_wait(top, t), SLUICE_SUCCESS, 'wait get', bad)
        call expect(sluice_task_call(top, T_NESTED, 0, nch, c_loc(job), c_sizeof(job), t), SLUICE_SUCCESS, 'call nested', bad)
        call expect(sluice_task_wait(top, t), SLUICE_SUCCESS, 'wait nested', bad)
        call expect(sluice_level_stats(top, st), SLUICE_SUCCESS, 'sluice_level_stats', bad)
        call check(st%tasks == 3 * nch, 'tasks counted', bad)
        call check(st%xfers > 0 .and. st%bytes > 0, 'transfers counted', bad)
        call check(st%peak_bytes >= N * 8, 'peak bytes', bad)
        ! A block-cyclic array (blocks of 3 rows: rows are dims(1)) and where its elements live.
        call expect(sluice_array_alloc_cyclic(top, c_sizeof(0d0), [N], D_C, 0_c_size_t, 3_c_size_t, got), SLUICE_SUCCESS, &
                    'alloc_cyclic', bad)
        call expect(sluice_array_add(top, got), SLUICE_SUCCESS, 'add C', bad)
        wrong = 0
        do i = 0, N - 1, 5
            call expect(sluice_array_home(top, D_C, i, home), SLUICE_SUCCESS, 'sluice_array_home', bad)
            want = -1
            if (top_kind == 'cluster') want = int(mod(i / 3, int(nch, c_size_t)))
            if (home /= want) wrong = wrong + 1
        end do
        call check(wrong == 0, 'homes of a block-cyclic array', bad)
        call expect(sluice_array_home(top, D_C, N, home), SLUICE_LEVELS_ERR_BOUNDS, 'home past the end', bad)
        call expect(sluice_array_free(top, got), SLUICE_SUCCESS, 'free C', bad)
        ! Remove, free, double free.
        call expect(sluice_array_remove(top, D_A), SLUICE_SUCCESS, 'remove A', bad)
        call expect(sluice_array_remove(top, D_A), SLUICE_LEVELS_ERR_DESC, 'remove A twice', bad)
        call expect(sluice_array_free(top, a), SLUICE_SUCCESS, 'free A', bad)
        call check(.not. c_associated(a%data), 'free resets data', bad)
        call expect(sluice_array_free(top, a), SLUICE_LEVELS_ERR_FREED, 'free A twice', bad)
        call expect(sluice_array_add(top, a), SLUICE_LEVELS_ERR_FREED, 'add a freed array', bad)
        ! B stays allocated: close frees it.
        call expect(sluice_level_close(top), SLUICE_SUCCESS, 'sluice_level_close', bad)
        call check(.not. c_associated(top), 'close resets the handle', bad)
        call expect(sluice_level_close(top), SLUICE_ERR_ARG, 'close twice', bad)
    end if

    ! Every element reached a leaf once (a cluster's leaves are in every rank).
    mine = int(sum(checked))
    total = mine
    if (top_kind == 'cluster') call MPI_Allreduce(mine, total, 1, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD, ierr)
    call check(total == N, 'every element checked by a leaf', bad)
    bad = bad + sum(errs)
    call MPI_Allreduce(MPI_IN_PLACE, bad, 1, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD, ierr)
    if (rank == 0) then
        if (bad == 0) then
            print '(a)', 'PASS'
        else
            print '(a,i0)', 'FAIL ', bad
        end if
    end if
    call MPI_Finalize(ierr)
end program levels
