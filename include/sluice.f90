! sluice's copy API for Fortran: `use sluice` (docs/runtime.md, include/sluice.h).
!
! Build the module with the application's compiler and link against libsluice.so (or preload
! it):  mpif90 -c include/sluice.f90  (it uses no MPI module: datatypes are Fortran handles, the
! INTEGER of `use mpi`/mpif.h or `dt%MPI_VAL` of `use mpi_f08`, so one module serves both MPIs).
!
!   type(sluice_place) :: a, b
!   type(c_ptr) :: ev                   ! an event; c_null_ptr when none
!   a = sluice_host(c_loc(x), n, MPI_DOUBLE_PRECISION)
!   fd = sluice_file_open('data.bin', SLUICE_FILE_CREATE)
!   b = sluice_file(fd, 0_8, 1_8, filetype)
!   ierr = sluice_copy(a, b, 0, ev)     ! starts the copy; 0 = SLUICE_SUCCESS
!   ierr = sluice_event_wait(ev)        ! waits, frees the event, sets ev to c_null_ptr
!
! Every function returns SLUICE_SUCCESS or an error code below (a message at warning level);
! sluice_file_open returns a file descriptor (>= 0) or an error code.
module sluice
    use, intrinsic :: iso_c_binding
    implicit none
    private

    integer, parameter, public :: SLUICE_SUCCESS = 0
    integer, parameter, public :: SLUICE_ERR_ARG = -2
    integer, parameter, public :: SLUICE_ERR_TYPE = -3
    integer, parameter, public :: SLUICE_ERR_SIZE = -4
    integer, parameter, public :: SLUICE_ERR_NOT_INITIALIZED = -5
    integer, parameter, public :: SLUICE_ERR_IO = -6
    integer, parameter, public :: SLUICE_ERR_PATH = -7
    integer, parameter, public :: SLUICE_ERR_THREAD = -8
    integer, parameter, public :: SLUICE_ERR_REMOTE = -9
    integer, parameter, public :: SLUICE_PLACE_HOST = 1
    integer, parameter, public :: SLUICE_PLACE_FILE = 2
    integer, parameter, public :: SLUICE_FILE_READ = 1
    integer, parameter, public :: SLUICE_FILE_WRITE = 2
    integer, parameter, public :: SLUICE_FILE_CREATE = 4

    ! A place: host memory (base) or a file (fd, offset in bytes), holding `count` elements of
    ! the datatype (a Fortran handle). Build it with sluice_host or sluice_file.
    type, bind(C), public :: sluice_place
        integer(c_int) :: kind = 0
        type(c_ptr) :: base = c_null_ptr
        integer(c_int) :: fd = -1
        integer(c_int64_t) :: offset = 0
        integer(c_int64_t) :: count = 0
        integer(c_int) :: datatype = 0
    end type

    public :: sluice_host, sluice_file, sluice_copy, sluice_event_wait, sluice_event_test
    public :: sluice_plan_explain, sluice_file_open, sluice_file_close
    public :: sluice_rma_init, sluice_put, sluice_get

    interface
        integer(c_int) function c_copy(src, dst, priority, event) bind(C, name="sluice_copy_f")
            import :: c_int, c_ptr, sluice_place
            type(sluice_place), intent(in) :: src, dst
            integer(c_int), value :: priority
            type(c_ptr), intent(inout) :: event
        end function
        integer(c_int) function c_explain(src, dst, text, size) bind(C, name="sluice_plan_explain_f")
            import :: c_int, c_char, sluice_place
            type(sluice_place), intent(in) :: src, dst
            character(kind=c_char), intent(out) :: text(*)
            integer(c_int), value :: size
        end function
        integer(c_int) function c_wait(event) bind(C, name="sluice_event_wait")
            import :: c_int, c_ptr
            type(c_ptr), intent(inout) :: event
        end function
        integer(c_int) function c_test(event, flag) bind(C, name="sluice_event_test")
            import :: c_int, c_ptr
            type(c_ptr), intent(inout) :: event
            integer(c_int), intent(out) :: flag
        end function
        integer(c_int) function c_open(path, flags) bind(C, name="sluice_file_open")
            import :: c_int, c_char
            character(kind=c_char), intent(in) :: path(*)
            integer(c_int), value :: flags
        end function
        integer(c_int) function c_rma_init() bind(C, name="sluice_rma_init")
            import :: c_int
        end function
        integer(c_int) function c_put(rank, remote, local, len, event) bind(C, name="sluice_put")
            import :: c_int, c_int64_t, c_ptr, c_size_t
            integer(c_int), value :: rank
            integer(c_int64_t), value :: remote
            type(c_ptr), value :: local
            integer(c_size_t), value :: len
            type(c_ptr), intent(inout) :: event
        end function
        integer(c_int) function c_get(rank, remote, local, len, event) bind(C, name="sluice_get")
            import :: c_int, c_int64_t, c_ptr, c_size_t
            integer(c_int), value :: rank
            integer(c_int64_t), value :: remote
            type(c_ptr), value :: local
            integer(c_size_t), value :: len
            type(c_ptr), intent(inout) :: event
        end function
        integer(c_int) function c_close(fd) bind(C, name="sluice_file_close")
            import :: c_int
            integer(c_int), value :: fd
        end function
    end interface

contains

    ! `count` elements of `datatype` at `base` (c_loc of the buffer, as its first element's
    ! address: the datatype's displacements start there).
    type(sluice_place) function sluice_host(base, count, datatype) result(p)
        type(c_ptr), intent(in) :: base
        integer(c_int64_t), intent(in) :: count
        integer, intent(in) :: datatype
        p%kind = SLUICE_PLACE_HOST
        p%base = base
        p%count = count
        p%datatype = datatype
    end function

    ! `count` elements of `datatype` in the file open as `fd`, displacements from byte `offset`.
    type(sluice_place) function sluice_file(fd, offset, count, datatype) result(p)
        integer, intent(in) :: fd
        integer(c_int64_t), intent(in) :: offset, count
        integer, intent(in) :: datatype
        p%kind = SLUICE_PLACE_FILE
        p%fd = fd
        p%offset = offset
        p%count = count
        p%datatype = datatype
    end function

    ! Starts copying src's data into dst; `event` receives the copy's event. A higher
    ! `priority` goes ahead of queued requests of lower ones on every channel they share.
    integer function sluice_copy(src, dst, priority, event)
        type(sluice_place), intent(in) :: src, dst
        integer, intent(in) :: priority
        type(c_ptr), intent(inout) :: event
        sluice_copy = c_copy(src, dst, int(priority, c_int), event)
    end function

    ! Waits for the copy, frees the event and sets it to c_null_ptr (a null event returns at once).
    integer function sluice_event_wait(event)
        type(c_ptr), intent(inout) :: event
        sluice_event_wait = c_wait(event)
    end function

    ! done = .true. (and the event freed) when the copy completed.
    integer function sluice_event_test(event, done)
        type(c_ptr), intent(inout) :: event
        logical, intent(out) :: done
        integer(c_int) :: flag
        sluice_event_test = c_test(event, flag)
        done = flag /= 0
    end function

    ! The plan a copy from src to dst would run, one line per hop (newline-separated, blank-padded
    ! or truncated to len(text)); returns the whole text's length, or an error code.
    integer function sluice_plan_explain(src, dst, text)
        type(sluice_place), intent(in) :: src, dst
        character(len=*), intent(out) :: text
        character(kind=c_char) :: buf(len(text) + 1)
        integer :: i, n
        n = c_explain(src, dst, buf, int(len(text) + 1, c_int))
        sluice_plan_explain = n
        text = ' '
        if (n < 0) return
        do i = 1, min(n, len(text))
            text(i:i) = buf(i)
        end do
    end function

    ! Opens a file for file places (flags: SLUICE_FILE_READ, _WRITE, _CREATE; creating never
    ! truncates). Returns the descriptor, or an error code.
    integer function sluice_file_open(path, flags)
        character(len=*), intent(in) :: path
        integer, intent(in) :: flags
        sluice_file_open = c_open(trim(path)//c_null_char, int(flags, c_int))
    end function

    integer function sluice_file_close(fd)
        integer, intent(in) :: fd
        sluice_file_close = c_close(int(fd, c_int))
    end function

    ! Opens the one-sided service (collective over MPI_COMM_WORLD; needs MPI_THREAD_MULTIPLE,
    ! or SLUICE_PROGRESS_THREAD=1). docs/firehose.md.
    integer function sluice_rma_init()
        sluice_rma_init = c_rma_init()
    end function

    ! Starts writing `len` bytes at `local` (c_loc of the buffer) to address `remote` of world
    ! rank `rank` (an address the target took with c_loc and sent); wait for `event`.
    integer function sluice_put(rank, remote, local, len, event)
        integer, intent(in) :: rank
        integer(c_int64_t), intent(in) :: remote, len
        type(c_ptr), intent(in) :: local
        type(c_ptr), intent(inout) :: event
        sluice_put = c_put(int(rank, c_int), remote, local, int(len, c_size_t), event)
    end function

    ! Starts reading `len` bytes at address `remote` of world rank `rank` into `local`.
    integer function sluice_get(rank, remote, local, len, event)
        integer, intent(in) :: rank
        integer(c_int64_t), intent(in) :: remote, len
        type(c_ptr), intent(in) :: local
        type(c_ptr), intent(inout) :: event
        sluice_get = c_get(int(rank, c_int), remote, local, int(len, c_size_t), event)
    end function

end module sluice
