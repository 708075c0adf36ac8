! sluice's multi-level runtime interface for Fortran: `use sluice_levels` (docs/levels.md,
! include/sluice_levels.h; every name is the C one, so the C documentation applies).
!
! Build the module with the application's compiler and link against libsluice.so:
!   mpif90 -c include/sluice_levels.f90   (no MPI module inside: one module serves both MPIs)
!
!   type(c_ptr) :: top, list, x, t           ! handles; c_null_ptr when none
!   type(c_funptr) :: tasks(2)
!   type(sluice_array_t) :: a
!   tasks = [c_funloc(fill), c_funloc(check)] ! task i-1 of sluice_task_call (0-based, as in C)
!   ierr = sluice_levels_open('', tasks, top) ! '' = the SLUICE_LEVELS environment variable
!   if (c_associated(top)) then               ! a cluster's ranks other than 0 get c_null_ptr
!       ierr = sluice_array_alloc(top, c_sizeof(0d0), [n], 1_c_int64_t, 0_c_size_t, a)
!       ierr = sluice_array_add(top, a)
!       ierr = sluice_task_call(top, 0, 0, sluice_level_siblings(top), c_loc(args), c_sizeof(args), t)
!       ierr = sluice_task_wait(top, t)
!       ierr = sluice_level_close(top)
!   end if
!
! A task is a bind(C) subroutine of interface sluice_task_fn:
!   recursive subroutine fill(level, arg, arg_len) bind(C)
!       type(c_ptr), value :: level, arg      ! arg: a copy of the block given to sluice_task_call
!       integer(c_size_t), value :: arg_len   ! (c_f_pointer it to its derived type)
!
! Names: those of C, but for two that Fortran cannot take (it ignores case, and a type cannot share
! a function's name): C's SLUICE_ARRAY_LOCAL is SLUICE_ARRAY_LOCAL_DESC, and the derived types keep
! the C typedefs' names, sluice_array_t and sluice_level_stats_t.
!
! Conventions (read these: they are C's, not Fortran's):
! * Element indices are 0-BASED and arrays are ROW-MAJOR, as in C. The index lists of
!   sluice_xfer_list_create (dst_idx, src_idx) count elements from 0 in the flattened array, and
!   dims(1) is the SLOWEST-varying extent: a Fortran array x(n1, n2) is described as dims = [n2, n1]
!   (reversed), and its element x(i, j) is flattened index (j - 1) * n1 + (i - 1).
! * Child ids (sluice_level_id), child ranges (start, end: children start .. end-1) and task ids
!   (the position in the task table minus one) are 0-based too.
! * Tasks of smp and disk levels run concurrently on threads of this process: make them
!   `recursive` (or compile with -frecursive or -fopenmp) so that their local variables are not
!   static, never give a local variable an initializer in its declaration (that makes it SAVE),
!   and write shared state only where no other child writes (e.g. a slot per child).
! * Handles (sluice_level_t, sluice_xfer_list_t, sluice_xfer_t, sluice_task_t) are type(c_ptr);
!   the calls that free a handle set it to c_null_ptr. Local memory given to sluice_array_local
!   must be TARGET (c_loc) and stay allocated until the transfers using it completed.
! * size_t values are integer(c_size_t), which is signed in Fortran: sluice_level_memory returns
!   SLUICE_LEVELS_UNBOUNDED (-1, C's SIZE_MAX) where the level has no memory bound. The counters
!   of sluice_level_stats_t (uint64_t in C) are integer(c_int64_t).
!
! Every function returns SLUICE_SUCCESS (0) or an error code below (a message at warning level,
! SLUICE_LOG); on an error nothing is allocated, registered, written or started.
module sluice_levels
    use, intrinsic :: iso_c_binding
    implicit none
    private

    integer, parameter, public :: SLUICE_SUCCESS = 0
    integer, parameter, public :: SLUICE_ERR_ARG = -2
    integer, parameter, public :: SLUICE_ERR_NOT_INITIALIZED = -5
    integer, parameter, public :: SLUICE_ERR_IO = -6
    integer, parameter, public :: SLUICE_ERR_THREAD = -8
    integer, parameter, public :: SLUICE_LEVELS_ERR_DESC = -20   ! unknown descriptor, or in use
    integer, parameter, public :: SLUICE_LEVELS_ERR_BOUNDS = -21 ! a transfer past an array's end
    integer, parameter, public :: SLUICE_LEVELS_ERR_CHILD = -22  ! a child id or range outside
    integer, parameter, public :: SLUICE_LEVELS_ERR_NOMEM = -23  ! past the level's memory bound
    integer, parameter, public :: SLUICE_LEVELS_ERR_SPEC = -24   ! the composition does not parse
    integer, parameter, public :: SLUICE_LEVELS_ERR_ROLE = -25   ! a top call on a child's handle
    integer, parameter, public :: SLUICE_LEVELS_ERR_TASK = -26   ! unknown task, arguments too large
    integer, parameter, public :: SLUICE_LEVELS_ERR_FREED = -27  ! the array was freed already
    integer, parameter, public :: SLUICE_LEVELS_MAX_DIMS = 4
    ! The descriptor of an array in a child's own memory: C's SLUICE_ARRAY_LOCAL, renamed because
    ! Fortran names ignore case and sluice_array_local is the function.
    integer(c_int64_t), parameter, public :: SLUICE_ARRAY_LOCAL_DESC = -1_c_int64_t
    ! Largest argument block (bytes) a task call copies to its children.
    integer, parameter, public :: SLUICE_TASK_ARG_MAX = 4096
    ! sluice_level_memory's answer for a level without a memory bound (C's SIZE_MAX).
    integer(c_size_t), parameter, public :: SLUICE_LEVELS_UNBOUNDED = -1_c_size_t

    ! An array (sluice_array_t): `ndims` extents dims(1:ndims), ROW-MAJOR (dims(1) varies slowest),
    ! of `elem_size`-byte elements; `data` is element 0's address where this process can address
    ! the whole array (the top of an smp level, a local array), c_null_ptr where it cannot.
    type, bind(C), public :: sluice_array_t
        integer(c_int64_t) :: desc = 0
        type(c_ptr) :: data = c_null_ptr
        integer(c_size_t) :: elem_size = 0
        integer(c_int) :: ndims = 0
        integer(c_size_t) :: dims(SLUICE_LEVELS_MAX_DIMS) = 0
    end type

    ! What a runtime did so far (sluice_level_stats).
    type, bind(C), public :: sluice_level_stats_t
        integer(c_int64_t) :: tasks = 0        ! child tasks started by this top
        integer(c_int64_t) :: xfers = 0        ! transfer lists run
        integer(c_int64_t) :: bytes = 0        ! bytes moved by them
        integer(c_int64_t) :: elided_bytes = 0 ! bytes not moved: both sides the same memory
        integer(c_int64_t) :: busy_ns = 0      ! time at least one transfer was in flight
        integer(c_int64_t) :: alive_ns = 0     ! time since the runtime was opened
        integer(c_int64_t) :: peak_bytes = 0   ! most bytes allocated at the top at once
    end type

    ! A task: runs on one child, `level` being that child's handle; `arg` points to a copy of the
    ! block given to sluice_task_call (valid until the task returns). Put c_funloc(task) in the
    ! table given to sluice_levels_open.
    abstract interface
        subroutine sluice_task_fn(level, arg, arg_len) bind(C)
            import :: c_ptr, c_size_t
            type(c_ptr), value :: level
            type(c_ptr), value :: arg
            integer(c_size_t), value :: arg_len
        end subroutine
    end interface
    public :: sluice_task_fn

    ! Wrappers (Fortran strings and arrays): below, in `contains`.
    public :: sluice_levels_open, sluice_level_kind, sluice_array_alloc, sluice_array_alloc_cyclic
    public :: sluice_array_local, sluice_array_home
    public :: sluice_xfer_list_create
    ! Direct bindings of the C functions.
    public :: sluice_level_below, sluice_level_close, sluice_level_id, sluice_level_siblings
    public :: sluice_level_memory, sluice_level_stats, sluice_array_free, sluice_array_add
    public :: sluice_array_remove, sluice_task_call, sluice_task_wait, sluice_array_get
    public :: sluice_xfer_list_free, sluice_xfer, sluice_xfer_wait, sluice_level_barrier

    interface
        ! ---- Creating and closing ----
        ! From a child's handle: the runtime of the next level pair (c_null_ptr: a leaf).
        integer(c_int) function sluice_level_below(child, below) bind(C, name="sluice_level_below")
            import :: c_int, c_ptr
            type(c_ptr), value :: child
            type(c_ptr), intent(inout) :: below
        end function
        ! From the top: waits for tasks, frees every array, stops the children; top = c_null_ptr.
        ! Close a cluster runtime before MPI_Finalize (its other ranks wait in sluice_levels_open).
        integer(c_int) function sluice_level_close(top) bind(C, name="sluice_level_close")
            import :: c_int, c_ptr
            type(c_ptr), intent(inout) :: top
        end function

        ! ---- Queries (either side) ----
        ! This child's id, 0 .. siblings-1, or -1 on a top handle.
        integer(c_int) function sluice_level_id(level) bind(C, name="sluice_level_id")
            import :: c_int, c_ptr
            type(c_ptr), value :: level
        end function
        integer(c_int) function sluice_level_siblings(level) bind(C, name="sluice_level_siblings")
            import :: c_int, c_ptr
            type(c_ptr), value :: level
        end function
        ! Bytes the top may still allocate (SLUICE_LEVELS_UNBOUNDED: no bound).
        integer(c_size_t) function sluice_level_memory(level) bind(C, name="sluice_level_memory")
            import :: c_size_t, c_ptr
            type(c_ptr), value :: level
        end function
        integer(c_int) function sluice_level_stats(level, stats) bind(C, name="sluice_level_stats")
            import :: c_int, c_ptr, sluice_level_stats_t
            type(c_ptr), value :: level
            type(sluice_level_stats_t), intent(out) :: stats
        end function

        ! ---- Top interface ----
        ! Frees an array of this top (and its registration); array%data becomes c_null_ptr.
        integer(c_int) function sluice_array_free(top, array) bind(C, name="sluice_array_free")
            import :: c_int, c_ptr, sluice_array_t
            type(c_ptr), value :: top
            type(sluice_array_t), intent(inout) :: array
        end function
        ! Registers an array this top allocated, under its descriptor.
        integer(c_int) function sluice_array_add(top, array) bind(C, name="sluice_array_add")
            import :: c_int, c_ptr, sluice_array_t
            type(c_ptr), value :: top
            type(sluice_array_t), intent(in) :: array
        end function
        integer(c_int) function sluice_array_remove(top, desc) bind(C, name="sluice_array_remove")
            import :: c_int, c_ptr, c_int64_t
            type(c_ptr), value :: top
            integer(c_int64_t), value :: desc
        end function
        ! Runs task `task` (0-based) on children start .. end-1 (0-based), each with a copy of
        ! arg_len bytes at `arg` (c_loc of a TARGET, or c_null_ptr with 0); asynchronous.
        integer(c_int) function sluice_task_call(top, task, start, end, arg, arg_len, handle) &
                bind(C, name="sluice_task_call")
            import :: c_int, c_ptr, c_size_t
            type(c_ptr), value :: top
            integer(c_int), value :: task, start, end
            type(c_ptr), value :: arg
            integer(c_size_t), value :: arg_len
            type(c_ptr), intent(inout) :: handle
        end function
        ! Waits for a task call, frees the handle and sets it to c_null_ptr.
        integer(c_int) function sluice_task_wait(top, handle) bind(C, name="sluice_task_wait")
            import :: c_int, c_ptr
            type(c_ptr), value :: top
            type(c_ptr), intent(inout) :: handle
        end function

        ! ---- Either side ----
        integer(c_int) function sluice_array_get(level, desc, array) bind(C, name="sluice_array_get")
            import :: c_int, c_ptr, c_int64_t, sluice_array_t
            type(c_ptr), value :: level
            integer(c_int64_t), value :: desc
            type(sluice_array_t), intent(out) :: array
        end function
        ! child = the child whose memory holds element `index` (0-based, row-major flattened) of
        ! the registered array `desc`, or -1 where the whole array is in the top's one memory.
        integer(c_int) function sluice_array_home(level, desc, index, child) bind(C, name="sluice_array_home")
            import :: c_int, c_ptr, c_int64_t, c_size_t
            type(c_ptr), value :: level
            integer(c_int64_t), value :: desc
            integer(c_size_t), value :: index
            integer(c_int), intent(out) :: child
        end function

        ! ---- Bottom interface ----
        integer(c_int) function sluice_xfer_list_free(list) bind(C, name="sluice_xfer_list_free")
            import :: c_int, c_ptr
            type(c_ptr), intent(inout) :: list
        end function
        ! Starts a transfer list (the local array must stay valid until it completes).
        integer(c_int) function sluice_xfer(child, list, xfer) bind(C, name="sluice_xfer")
            import :: c_int, c_ptr
            type(c_ptr), value :: child, list
            type(c_ptr), intent(inout) :: xfer
        end function
        ! Waits for a transfer, frees the handle, sets it to c_null_ptr; SLUICE_ERR_IO if it failed.
        integer(c_int) function sluice_xfer_wait(child, xfer) bind(C, name="sluice_xfer_wait")
            import :: c_int, c_ptr
            type(c_ptr), value :: child
            type(c_ptr), intent(inout) :: xfer
        end function
        ! Barrier among children start .. end-1 (0-based), the caller one of them.
        integer(c_int) function sluice_level_barrier(child, start, end) bind(C, name="sluice_level_barrier")
            import :: c_int, c_ptr
            type(c_ptr), value :: child
            integer(c_int), value :: start, end
        end function
    end interface

    ! The C entry points behind the wrappers.
    interface
        integer(c_int) function c_open(spec, tasks, ntasks, top) bind(C, name="sluice_levels_open")
            import :: c_int, c_ptr, c_funptr
            type(c_ptr), value :: spec
            type(c_funptr), intent(in) :: tasks(*)
            integer(c_int), value :: ntasks
            type(c_ptr), intent(out) :: top
        end function
        type(c_ptr) function c_kind(level) bind(C, name="sluice_level_kind")
            import :: c_ptr
            type(c_ptr), value :: level
        end function
        integer(c_size_t) function c_strlen(s) bind(C, name="strlen")
            import :: c_size_t, c_ptr
            type(c_ptr), value :: s
        end function
        integer(c_int) function c_alloc(top, elem_size, ndims, dims, desc, alignment, array) &
                bind(C, name="sluice_array_alloc")
            import :: c_int, c_ptr, c_size_t, c_int64_t, sluice_array_t
            type(c_ptr), value :: top
            integer(c_size_t), value :: elem_size
            integer(c_int), value :: ndims
            integer(c_size_t), intent(in) :: dims(*)
            integer(c_int64_t), value :: desc
            integer(c_size_t), value :: alignment
            type(sluice_array_t), intent(out) :: array
        end function
        integer(c_int) function c_alloc_cyclic(top, elem_size, ndims, dims, desc, alignment, block_rows, array) &
                bind(C, name="sluice_array_alloc_cyclic")
            import :: c_int, c_ptr, c_size_t, c_int64_t, sluice_array_t
            type(c_ptr), value :: top
            integer(c_size_t), value :: elem_size
            integer(c_int), value :: ndims
            integer(c_size_t), intent(in) :: dims(*)
            integer(c_int64_t), value :: desc
            integer(c_size_t), value :: alignment, block_rows
            type(sluice_array_t), intent(out) :: array
        end function
        integer(c_int) function c_local(data, elem_size, ndims, dims, array) bind(C, name="sluice_array_local")
            import :: c_int, c_ptr, c_size_t, sluice_array_t
            type(c_ptr), value :: data
            integer(c_size_t), value :: elem_size
            integer(c_int), value :: ndims
            integer(c_size_t), intent(in) :: dims(*)
            type(sluice_array_t), intent(out) :: array
        end function
        integer(c_int) function c_list_create(child, dst, src, dst_idx, src_idx, lengths, count, list) &
                bind(C, name="sluice_xfer_list_create")
            import :: c_int, c_ptr, c_size_t, sluice_array_t
            type(c_ptr), value :: child
            type(sluice_array_t), intent(in) :: dst, src
            integer(c_size_t), intent(in) :: dst_idx(*), src_idx(*), lengths(*)
            integer(c_size_t), value :: count
            type(c_ptr), intent(inout) :: list
        end function
    end interface

contains

    ! Opens the runtime of the composition's top level pair; `top` receives its top handle.
    ! spec: a composition ("smp:4", "disk/smp:2@64M", "cluster/smp:2"), or '' (blank) for the
    ! SLUICE_LEVELS environment variable (else "smp"). tasks: the task table, c_funloc of each
    ! task; task ids are positions in it minus one. For a `cluster` top, collective over
    ! MPI_COMM_WORLD (after MPI_Init_thread at MPI_THREAD_MULTIPLE): rank 0 receives the top
    ! handle, every other rank serves as a child until rank 0 closes, then returns with
    ! top = c_null_ptr.
    integer function sluice_levels_open(spec, tasks, top)
        character(len=*), intent(in) :: spec
        type(c_funptr), intent(in) :: tasks(:)
        type(c_ptr), intent(out) :: top
        character(kind=c_char), target :: cspec(len_trim(spec) + 1)
        type(c_funptr) :: table(max(size(tasks), 1))
        integer :: i
        top = c_null_ptr
        table = c_null_funptr
        table(1:size(tasks)) = tasks ! the runtime copies the table: it may go out of scope
        if (len_trim(spec) == 0) then
            sluice_levels_open = c_open(c_null_ptr, table, int(size(tasks), c_int), top)
        else
            do i = 1, len_trim(spec)
                cspec(i) = spec(i:i)
            end do
            cspec(len_trim(spec) + 1) = c_null_char
            sluice_levels_open = c_open(c_loc(cspec), table, int(size(tasks), c_int), top)
        end if
    end function

    ! "smp", "disk" or "cluster"; "" for a bad handle.
    function sluice_level_kind(level) result(name)
        type(c_ptr), intent(in) :: level
        character(len=:), allocatable :: name
        type(c_ptr) :: p
        character(kind=c_char), pointer :: chars(:)
        integer :: i, n
        p = c_kind(level)
        n = 0
        if (c_associated(p)) n = int(c_strlen(p))
        allocate(character(len=n) :: name)
        if (n == 0) return
        call c_f_pointer(p, chars, [n])
        do i = 1, n
            name(i:i) = chars(i)
        end do
    end function

    ! Allocates an array at the top of shape dims (ROW-MAJOR: dims(1) varies slowest; at most
    ! SLUICE_LEVELS_MAX_DIMS extents) of elem_size-byte elements (c_sizeof(x)), aligned to
    ! `alignment` (a power of two, 0 for the default), described in `array` under descriptor
    ! desc (>= 0). Not yet visible to children: sluice_array_add.
    integer function sluice_array_alloc(top, elem_size, dims, desc, alignment, array)
        type(c_ptr), intent(in) :: top
        integer(c_size_t), intent(in) :: elem_size
        integer(c_size_t), intent(in) :: dims(:)
        integer(c_int64_t), intent(in) :: desc
        integer(c_size_t), intent(in) :: alignment
        type(sluice_array_t), intent(out) :: array
        integer(c_size_t) :: d(max(size(dims), 1))
        d = 0
        d(1:size(dims)) = dims
        sluice_array_alloc = c_alloc(top, elem_size, int(size(dims), c_int), d, desc, alignment, array)
    end function

    ! As sluice_array_alloc, distributed block-cyclically over a cluster top's ranks in blocks of
    ! block_rows rows (rows: dims(1), the ROW-MAJOR first extent; 0: one block per child).
    integer function sluice_array_alloc_cyclic(top, elem_size, dims, desc, alignment, block_rows, array)
        type(c_ptr), intent(in) :: top
        integer(c_size_t), intent(in) :: elem_size
        integer(c_size_t), intent(in) :: dims(:)
        integer(c_int64_t), intent(in) :: desc
        integer(c_size_t), intent(in) :: alignment, block_rows
        type(sluice_array_t), intent(out) :: array
        integer(c_size_t) :: d(max(size(dims), 1))
        d = 0
        d(1:size(dims)) = dims
        sluice_array_alloc_cyclic = c_alloc_cyclic(top, elem_size, int(size(dims), c_int), d, desc, alignment, &
                                                   block_rows, array)
    end function

    ! Describes memory of this child at `data` (c_loc of a TARGET array, or an array%data of the
    ! level below) as an array of shape dims (ROW-MAJOR, see above) with descriptor
    ! SLUICE_ARRAY_LOCAL_DESC. The memory must stay allocated while transfers use it.
    integer function sluice_array_local(data, elem_size, dims, array)
        type(c_ptr), intent(in) :: data
        integer(c_size_t), intent(in) :: elem_size
        integer(c_size_t), intent(in) :: dims(:)
        type(sluice_array_t), intent(out) :: array
        integer(c_size_t) :: d(max(size(dims), 1))
        d = 0
        d(1:size(dims)) = dims
        sluice_array_local = c_local(data, elem_size, int(size(dims), c_int), d, array)
    end function

    ! A transfer list of size(lengths) runs: run i copies lengths(i) elements from src at element
    ! src_idx(i) to dst at element dst_idx(i), indices 0-BASED into the flattened, row-major arrays
    ! (Fortran element x(k) of a 1-D local array is index k-1). One of dst and src is a registered
    ! array of this runtime's top (sluice_array_get), the other a local array (sluice_array_local).
    ! dst_idx and src_idx must have size(lengths) elements (else SLUICE_ERR_ARG).
    integer function sluice_xfer_list_create(child, dst, src, dst_idx, src_idx, lengths, list)
        type(c_ptr), intent(in) :: child
        type(sluice_array_t), intent(in) :: dst, src
        integer(c_size_t), intent(in) :: dst_idx(:), src_idx(:), lengths(:)
        type(c_ptr), intent(inout) :: list
        integer(c_size_t) :: none(1)
        if (size(dst_idx) /= size(lengths) .or. size(src_idx) /= size(lengths)) then
            sluice_xfer_list_create = SLUICE_ERR_ARG
            return
        end if
        none = 0
        if (size(lengths) == 0) then
            sluice_xfer_list_create = c_list_create(child, dst, src, none, none, none, 0_c_size_t, list)
        else
            sluice_xfer_list_create = c_list_create(child, dst, src, dst_idx, src_idx, lengths, &
                                                    int(size(lengths), c_size_t), list)
        end if
    end function

end module sluice_levels
