! p2p.F90 -- sluice Fortran interception test for the `use mpi` bindings, or, compiled with
! -DSLUICE_MPIF_H, for `include 'mpif.h'` (f08_p2p.f90 is the `use mpi_f08` version).
! The mpif.h build needs -fallow-argument-mismatch with gfortran >= 10 (one buffer argument is
! given INTEGER and DOUBLE PRECISION arrays).
!
! Checks, on 2 or more ranks (ring: send to rank+1, receive from rank-1), every received value:
!   MPI_Send/MPI_Recv (status source/tag, MPI_Get_count, MPI_Get_elements), MPI_Isend/MPI_Irecv
!   + MPI_Waitall, MPI_Sendrecv, MPI_Sendrecv_replace, persistent MPI_Send_init/MPI_Recv_init
!   + MPI_Startall/MPI_Waitall and MPI_Start/MPI_Wait + MPI_Request_free, MPI_Probe and
!   MPI_Iprobe + MPI_Recv, MPI_Mprobe/MPI_Mrecv (these five leave a status's MPI_ERROR alone),
!   MPI_Improbe/MPI_Imrecv, MPI_Type_vector + MPI_Type_commit + send of the vector +
!   MPI_Type_free, MPI_Pack_size/MPI_Pack/MPI_Unpack,
!   MPI_Comm_dup/MPI_Comm_free, MPI_Waitany / MPI_Waitsome / MPI_Testany indices (1-based,
!   MPI_UNDEFINED when nothing is active), MPI_Test/MPI_Testall/MPI_Testsome/
!   MPI_Request_get_status LOGICAL flags, MPI_STATUS_IGNORE and MPI_STATUSES_IGNORE.
! Rank 0 prints exactly "PASS" when all ranks passed (MPI_Allreduce of the error count), else
! "FAIL <count>" and calls MPI_Abort. Run under SLUICE_STATS=1 to see the calls intercepted.
! MPICH's own Fortran bindings have known index bugs, independent of sluice (for mpif.h and
! `use mpi` sluice's MPICH build exports no Fortran code; for mpi_f08 it exports the completion
! calls and returns standard 1-based indices): MPICH's mpi_f08 returns 0-based indices in 4.0.x
! (pmodels/mpich#6270) and MPI_UNDEFINED comes back as MPI_UNDEFINED+1 (#6402, #6989). With
! MPICH the test calibrates the index base once and accepts MPI_UNDEFINED+1; with any other MPI
! (Open MPI, where sluice converts the indices itself) every index check is strict.
program p2p
#ifndef SLUICE_MPIF_H
  use mpi
#endif
  implicit none
#ifdef SLUICE_MPIF_H
  include 'mpif.h'
#endif
  integer :: ierr, rank, nranks, left, right, errs, total, i, k, it, j, done
  integer :: cnt, idx, outcount, pos, psize, dupcomm, vtype, msg, sreq, spins
  integer :: status(MPI_STATUS_SIZE), statuses(MPI_STATUS_SIZE, 3)
  integer :: reqs(3), sreqs(3), indices(3)
  integer :: sbuf(12), rbuf(12), rbufs(4, 3), packbuf(64)
  double precision :: dsend(3), drecv(3)
  logical :: flag, seen(3), is_mpich
  character(len=MPI_MAX_LIBRARY_VERSION_STRING) :: libver
  integer :: reslen, ioff
  integer, parameter :: maxspins = 100000000

  call MPI_Init(ierr)
  call MPI_Comm_rank(MPI_COMM_WORLD, rank, ierr)
  call MPI_Comm_size(MPI_COMM_WORLD, nranks, ierr)
  right = mod(rank + 1, nranks)
  left = mod(rank - 1 + nranks, nranks)
  errs = 0
  if (nranks < 2) then
    ! The blocking ring sends before it receives: with one rank that may never complete.
    print '(a)', 'FAIL needs at least 2 ranks'
    call MPI_Abort(MPI_COMM_WORLD, 1, ierr)
  end if

  ! ---- index base of this MPI's Fortran bindings (see the note at the top) -----------------
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

  ! ---- blocking ring -----------------------------------------------------------------------
  call fill(0)
  if (mod(rank, 2) == 0) then
    call MPI_Send(sbuf, 10, MPI_INTEGER, right, 11, MPI_COMM_WORLD, ierr)
    call MPI_Recv(rbuf, 12, MPI_INTEGER, left, 11, MPI_COMM_WORLD, status, ierr)
  else
    call MPI_Recv(rbuf, 12, MPI_INTEGER, left, 11, MPI_COMM_WORLD, status, ierr)
    call MPI_Send(sbuf, 10, MPI_INTEGER, right, 11, MPI_COMM_WORLD, ierr)
  end if
  call check(ierr == MPI_SUCCESS, 'send/recv ierr')
  call check_status(status, 11, 10, 'send/recv')
  call MPI_Get_elements(status, MPI_INTEGER, cnt, ierr)
  call check(cnt == 10, 'get_elements')
  call check_data(rbuf, 10, 0, 'send/recv')
  call check(rbuf(11) == -1, 'recv overran')

  ! ---- nonblocking + Waitall ---------------------------------------------------------------
  call fill(1)
  call MPI_Irecv(rbuf, 10, MPI_INTEGER, left, 21, MPI_COMM_WORLD, reqs(1), ierr)
  call MPI_Isend(sbuf, 10, MPI_INTEGER, right, 21, MPI_COMM_WORLD, reqs(2), ierr)
  call MPI_Waitall(2, reqs, statuses, ierr)
  call check(ierr == MPI_SUCCESS, 'waitall ierr')
  call check_status(statuses(:, 1), 21, 10, 'irecv')
  call check(reqs(1) == MPI_REQUEST_NULL .and. reqs(2) == MPI_REQUEST_NULL, 'waitall nulls')
  call check_data(rbuf, 10, 1, 'irecv')

  ! ---- Sendrecv, Sendrecv_replace ----------------------------------------------------------
  call fill(2)
  call MPI_Sendrecv(sbuf, 8, MPI_INTEGER, right, 31, rbuf, 12, MPI_INTEGER, left, 31, &
                    MPI_COMM_WORLD, status, ierr)
  call check_status(status, 31, 8, 'sendrecv')
  call check_data(rbuf, 8, 2, 'sendrecv')
  k = rank
  call MPI_Sendrecv_replace(k, 1, MPI_INTEGER, right, 32, left, 32, MPI_COMM_WORLD, &
                            MPI_STATUS_IGNORE, ierr)
  call check(k == left, 'sendrecv_replace')

  ! ---- persistent --------------------------------------------------------------------------
  call MPI_Recv_init(rbuf, 10, MPI_INTEGER, left, 41, MPI_COMM_WORLD, reqs(1), ierr)
  call MPI_Send_init(sbuf, 10, MPI_INTEGER, right, 41, MPI_COMM_WORLD, reqs(2), ierr)
  do it = 1, 3
    call fill(10 + it)
    if (it < 3) then
      call MPI_Startall(2, reqs, ierr)
      call MPI_Waitall(2, reqs, MPI_STATUSES_IGNORE, ierr)
    else
      call MPI_Start(reqs(1), ierr)
      call MPI_Start(reqs(2), ierr)
      call MPI_Wait(reqs(2), MPI_STATUS_IGNORE, ierr)
      call MPI_Wait(reqs(1), status, ierr)
      call check_status(status, 41, 10, 'persistent wait')
    end if
    call check(ierr == MPI_SUCCESS, 'persistent ierr')
    call check(reqs(1) /= MPI_REQUEST_NULL, 'persistent request stays')
    call check_data(rbuf, 10, 10 + it, 'persistent')
  end do
  call MPI_Request_free(reqs(1), ierr)
  call MPI_Request_free(reqs(2), ierr)
  call check(reqs(1) == MPI_REQUEST_NULL .and. reqs(2) == MPI_REQUEST_NULL, 'request_free')

  ! ---- Probe, Iprobe, Mprobe, Improbe ------------------------------------------------------
  call fill(3)
  call MPI_Isend(sbuf, 7, MPI_INTEGER, right, 51, MPI_COMM_WORLD, sreq, ierr)
  ! Single-status calls leave MPI_ERROR alone (MPI 4.0, 3.2.5): preset, checked after each.
  ! MPICH's own MPI_Probe and MPI_Iprobe set it to MPI_SUCCESS (with or without sluice).
  status(MPI_ERROR) = MPI_ERR_DIMS
  call MPI_Probe(left, MPI_ANY_TAG, MPI_COMM_WORLD, status, ierr)
  call check_status(status, 51, 7, 'probe')
  call check(status(MPI_ERROR) == MPI_ERR_DIMS .or. (is_mpich .and. status(MPI_ERROR) == MPI_SUCCESS), &
             'probe leaves MPI_ERROR')
  call MPI_Get_count(status, MPI_INTEGER, cnt, ierr)
  call MPI_Recv(rbuf, cnt, MPI_INTEGER, status(MPI_SOURCE), status(MPI_TAG), MPI_COMM_WORLD, &
                MPI_STATUS_IGNORE, ierr)
  call check_data(rbuf, 7, 3, 'probe recv')
  call MPI_Wait(sreq, MPI_STATUS_IGNORE, ierr)

  call fill(4)
  call MPI_Isend(sbuf, 5, MPI_INTEGER, right, 52, MPI_COMM_WORLD, sreq, ierr)
  flag = .false.
  spins = 0
  do while (.not. flag .and. spins < maxspins)
    status(MPI_ERROR) = MPI_ERR_DIMS
    call MPI_Iprobe(left, 52, MPI_COMM_WORLD, flag, status, ierr)
    spins = spins + 1
  end do
  call check(flag, 'iprobe flag')
  call check_status(status, 52, 5, 'iprobe')
  call check(status(MPI_ERROR) == MPI_ERR_DIMS .or. (is_mpich .and. status(MPI_ERROR) == MPI_SUCCESS), &
             'iprobe leaves MPI_ERROR')
  status(MPI_ERROR) = MPI_ERR_OTHER
  call MPI_Recv(rbuf, 12, MPI_INTEGER, left, 52, MPI_COMM_WORLD, status, ierr)
  call check_data(rbuf, 5, 4, 'iprobe recv')
  call check(status(MPI_ERROR) == MPI_ERR_OTHER, 'recv leaves MPI_ERROR')
  flag = .false.
  do while (.not. flag)
    call MPI_Request_get_status(sreq, flag, status, ierr)
  end do
  call MPI_Wait(sreq, MPI_STATUS_IGNORE, ierr)
  call check(sreq == MPI_REQUEST_NULL, 'wait null')

  call fill(5)
  call MPI_Isend(sbuf, 6, MPI_INTEGER, right, 53, MPI_COMM_WORLD, sreq, ierr)
  status(MPI_ERROR) = MPI_ERR_DIMS
  call MPI_Mprobe(left, 53, MPI_COMM_WORLD, msg, status, ierr)
  call check_status(status, 53, 6, 'mprobe')
  call check(status(MPI_ERROR) == MPI_ERR_DIMS, 'mprobe leaves MPI_ERROR')
  status(MPI_ERROR) = MPI_ERR_OTHER
  call MPI_Mrecv(rbuf, 12, MPI_INTEGER, msg, status, ierr)
  call check(msg == MPI_MESSAGE_NULL, 'mrecv message null')
  call check_status(status, 53, 6, 'mrecv')
  call check(status(MPI_ERROR) == MPI_ERR_OTHER, 'mrecv leaves MPI_ERROR')
  call check_data(rbuf, 6, 5, 'mrecv')
  flag = .false.
  do while (.not. flag)
    call MPI_Test(sreq, flag, MPI_STATUS_IGNORE, ierr)
  end do
  call check(sreq == MPI_REQUEST_NULL, 'test null')

  call fill(6)
  call MPI_Isend(sbuf, 9, MPI_INTEGER, right, 54, MPI_COMM_WORLD, sreq, ierr)
  flag = .false.
  do while (.not. flag)
    call MPI_Improbe(left, 54, MPI_COMM_WORLD, flag, msg, status, ierr)
  end do
  call MPI_Imrecv(rbuf, 12, MPI_INTEGER, msg, reqs(1), ierr)
  call MPI_Wait(reqs(1), status, ierr)
  call check_status(status, 54, 9, 'imrecv')
  call check_data(rbuf, 9, 6, 'imrecv')
  call MPI_Wait(sreq, MPI_STATUS_IGNORE, ierr)

  ! ---- derived datatype --------------------------------------------------------------------
  do i = 1, 12
    sbuf(i) = rank * 100 + i
  end do
  rbuf = -1
  call MPI_Type_vector(4, 1, 3, MPI_INTEGER, vtype, ierr)
  call MPI_Type_commit(vtype, ierr)
  call check(ierr == MPI_SUCCESS, 'type_commit')
  call MPI_Isend(sbuf, 1, vtype, right, 61, MPI_COMM_WORLD, sreq, ierr)
  call MPI_Recv(rbuf, 12, MPI_INTEGER, left, 61, MPI_COMM_WORLD, status, ierr)
  call check_status(status, 61, 4, 'vector')
  do k = 1, 4
    call check(rbuf(k) == left * 100 + 1 + 3 * (k - 1), 'vector data')
  end do
  call MPI_Wait(sreq, MPI_STATUS_IGNORE, ierr)
  call MPI_Type_free(vtype, ierr)
  call check(vtype == MPI_DATATYPE_NULL, 'type_free')

  ! ---- Pack / Unpack -----------------------------------------------------------------------
  call fill(7)
  dsend = (/ 1.5d0, -2.25d0, dble(rank) /)
  drecv = 0
  call MPI_Pack_size(5, MPI_INTEGER, MPI_COMM_WORLD, psize, ierr)
  call check(psize >= 20, 'pack_size')
  pos = 0
  call MPI_Pack(sbuf, 5, MPI_INTEGER, packbuf, 256, pos, MPI_COMM_WORLD, ierr)
  call MPI_Pack(dsend, 3, MPI_DOUBLE_PRECISION, packbuf, 256, pos, MPI_COMM_WORLD, ierr)
  call check(pos == 44, 'pack position')
  rbuf = -1
  pos = 0
  call MPI_Unpack(packbuf, 256, pos, rbuf, 5, MPI_INTEGER, MPI_COMM_WORLD, ierr)
  call MPI_Unpack(packbuf, 256, pos, drecv, 3, MPI_DOUBLE_PRECISION, MPI_COMM_WORLD, ierr)
  call check(pos == 44, 'unpack position')
  do i = 1, 5
    call check(rbuf(i) == rank * 100 + i + 7000, 'unpack ints')
  end do
  call check(all(drecv == dsend), 'unpack doubles')

  ! ---- Comm_dup / Comm_free ----------------------------------------------------------------
  call MPI_Comm_dup(MPI_COMM_WORLD, dupcomm, ierr)
  call check(dupcomm /= MPI_COMM_NULL, 'comm_dup')
  call fill(8)
  call MPI_Sendrecv(sbuf, 3, MPI_INTEGER, right, 81, rbuf, 12, MPI_INTEGER, left, 81, &
                    dupcomm, status, ierr)
  call check_status(status, 81, 3, 'dup sendrecv')
  call check_data(rbuf, 3, 8, 'dup sendrecv')
  call MPI_Comm_free(dupcomm, ierr)
  call check(dupcomm == MPI_COMM_NULL, 'comm_free')

  ! ---- Waitany (indices), Testall ----------------------------------------------------------
  rbufs = -1
  do k = 1, 3
    call MPI_Irecv(rbufs(1, k), 4, MPI_INTEGER, left, 90 + k, MPI_COMM_WORLD, reqs(k), ierr)
  end do
  do k = 3, 1, -1
    sbuf(1:4) = rank * 100 + 10 * k + (/ 1, 2, 3, 4 /)
    call MPI_Isend(sbuf, 4, MPI_INTEGER, right, 90 + k, MPI_COMM_WORLD, sreqs(k), ierr)
    call MPI_Wait(sreqs(k), MPI_STATUS_IGNORE, ierr)
  end do
  seen = .false.
  do j = 1, 3
    call MPI_Waitany(3, reqs, idx, status, ierr)
    idx = std_index(idx)
    if (idx < 1 .or. idx > 3) then
      call check(.false., 'waitany index range')
      cycle
    end if
    call check(.not. seen(idx), 'waitany index repeated')
    seen(idx) = .true.
    call check(status(MPI_TAG) == 90 + idx, 'waitany tag matches index')
    call check(reqs(idx) == MPI_REQUEST_NULL, 'waitany null')
    call check(rbufs(1, idx) == left * 100 + 10 * idx + 1 .and. &
               rbufs(4, idx) == left * 100 + 10 * idx + 4, 'waitany data')
  end do
  call MPI_Waitany(3, reqs, idx, status, ierr)
  call check(undefined_index(idx), 'waitany undefined')

  ! ---- Waitsome (indices), Testsome --------------------------------------------------------
  rbufs = -1
  do k = 1, 3
    call MPI_Irecv(rbufs(1, k), 4, MPI_INTEGER, left, 100 + k, MPI_COMM_WORLD, reqs(k), ierr)
  end do
  do k = 1, 3
    sbuf(4 * k - 3:4 * k) = rank * 100 + 10 * k + (/ 1, 2, 3, 4 /)
    call MPI_Isend(sbuf(4 * k - 3), 4, MPI_INTEGER, right, 100 + k, MPI_COMM_WORLD, &
                   sreqs(k), ierr)
  end do
  seen = .false.
  done = 0
  do while (done < 3)
    call MPI_Waitsome(3, reqs, outcount, indices, statuses, ierr)
    if (outcount < 1 .or. outcount > 3 - done) then
      call check(.false., 'waitsome outcount')
      exit
    end if
    do j = 1, outcount
      idx = std_index(indices(j))
      if (idx < 1 .or. idx > 3) then
        call check(.false., 'waitsome index range')
        cycle
      end if
      call check(.not. seen(idx), 'waitsome index repeated')
      seen(idx) = .true.
      call check(statuses(MPI_TAG, j) == 100 + idx, 'waitsome tag matches index')
      call check(rbufs(1, idx) == left * 100 + 10 * idx + 1 .and. &
                 rbufs(4, idx) == left * 100 + 10 * idx + 4, 'waitsome data')
    end do
    done = done + outcount
  end do
  call MPI_Waitsome(3, reqs, outcount, indices, statuses, ierr)
  call check(outcount == MPI_UNDEFINED, 'waitsome undefined')
  done = 0
  spins = 0
  do while (done < 3 .and. spins < maxspins)
    call MPI_Testsome(3, sreqs, outcount, indices, MPI_STATUSES_IGNORE, ierr)
    if (outcount == MPI_UNDEFINED) exit
    do j = 1, outcount
      call check(std_index(indices(j)) >= 1 .and. std_index(indices(j)) <= 3, &
                 'testsome index range')
    end do
    done = done + outcount
    spins = spins + 1
  end do
  call check(done == 3, 'testsome completed all')
  call MPI_Testall(3, sreqs, flag, MPI_STATUSES_IGNORE, ierr)
  call check(flag, 'testall flag')

  ! ---- Testany (index 2 behind a null request) ---------------------------------------------
  call fill(9)
  rbuf = -1
  reqs(1) = MPI_REQUEST_NULL
  call MPI_Irecv(rbuf, 12, MPI_INTEGER, left, 111, MPI_COMM_WORLD, reqs(2), ierr)
  call MPI_Isend(sbuf, 2, MPI_INTEGER, right, 111, MPI_COMM_WORLD, sreqs(1), ierr)
  flag = .false.
  spins = 0
  do while (.not. flag .and. spins < maxspins)
    call MPI_Testany(2, reqs, idx, flag, status, ierr)
    spins = spins + 1
  end do
  call check(flag, 'testany flag')
  call check(std_index(idx) == 2, 'testany index')
  call check_status(status, 111, 2, 'testany')
  call check_data(rbuf, 2, 9, 'testany')
  call MPI_Testany(2, reqs, idx, flag, status, ierr)
  call check(flag .and. undefined_index(idx), 'testany undefined')
  call MPI_Testall(1, sreqs, flag, statuses, ierr)
  do while (.not. flag)
    call MPI_Testall(1, sreqs, flag, statuses, ierr)
  end do

  ! ---- verdict -----------------------------------------------------------------------------
  call MPI_Allreduce(errs, total, 1, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD, ierr)
  if (rank == 0) then
    if (total == 0) then
      print '(a)', 'PASS'
    else
      print '(a,i0)', 'FAIL ', total
    end if
  end if
  if (total /= 0) call MPI_Abort(MPI_COMM_WORLD, 1, ierr)
  call MPI_Finalize(ierr)

contains

  ! A returned Fortran index as the standard (1-based) index.
  integer function std_index(i)
    integer, intent(in) :: i
    std_index = i + ioff
  end function std_index

  ! Whether a returned index means MPI_UNDEFINED.
  logical function undefined_index(i)
    integer, intent(in) :: i
    undefined_index = i == MPI_UNDEFINED .or. (is_mpich .and. i == MPI_UNDEFINED + 1)
  end function undefined_index

  subroutine fill(round)
    integer, intent(in) :: round
    integer :: n
    do n = 1, 12
      sbuf(n) = rank * 100 + n + 1000 * round
    end do
    rbuf = -1
  end subroutine fill

  subroutine check(ok, what)
    logical, intent(in) :: ok
    character(len=*), intent(in) :: what
    if (.not. ok) then
      errs = errs + 1
      print '(a,i0,2a)', 'rank ', rank, ': check failed: ', what
    end if
  end subroutine check

  subroutine check_status(st, tag, count, what)
    integer, intent(in) :: st(MPI_STATUS_SIZE), tag, count
    character(len=*), intent(in) :: what
    integer :: c, e
    call MPI_Get_count(st, MPI_INTEGER, c, e)
    call check(st(MPI_SOURCE) == left, what // ': status source')
    call check(st(MPI_TAG) == tag, what // ': status tag')
    call check(c == count, what // ': get_count')
  end subroutine check_status

  subroutine check_data(buf, n, round, what)
    integer, intent(in) :: buf(12), n, round
    character(len=*), intent(in) :: what
    integer :: m
    do m = 1, n
      if (buf(m) /= left * 100 + m + 1000 * round) then
        call check(.false., what // ': data')
        return
      end if
    end do
  end subroutine check_data

end program p2p
