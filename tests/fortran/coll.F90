! coll.F90 -- sluice Fortran collectives test, for the `use mpi` bindings, or, compiled with
! -DSLUICE_MPIF_H, for `include 'mpif.h'`, or with -DSLUICE_F08 for `use mpi_f08` (handles then
! are TYPE(MPI_Comm), TYPE(MPI_Datatype), TYPE(MPI_Request)). The mpif.h build needs
! -fallow-argument-mismatch with gfortran >= 10 (MPI_IN_PLACE is passed where arrays go).
!
! Every data-movement collective sluice intercepts, blocking and in its nonblocking form
! completed by MPI_Wait, with a non-contiguous datatype (`vt`: 3 INTEGERs at stride 2, resized
! to an extent of 6 INTEGERs) so that sluice's engine packs and unpacks:
!   MPI_(I)Bcast, (I)Gather, (I)Gatherv (MPI_IN_PLACE at the root), (I)Scatter, (I)Scatterv
!   (MPI_IN_PLACE at the root, received as plain INTEGERs), (I)Allgather (MPI_IN_PLACE),
!   (I)Allgatherv, (I)Alltoall, (I)Alltoallv, (I)Alltoallw (a type per peer, byte
!   displacements; blocking also with MPI_IN_PLACE), and on a 1-D non-periodic Cartesian
!   communicator (MPI_PROC_NULL at both ends) MPI_(I)Neighbor_allgather(v),
!   (I)Neighbor_alltoall(v) and (I)Neighbor_alltoallw (INTEGER(KIND=MPI_ADDRESS_KIND)
!   displacements; not with MPICH's mpi_f08, see below), and MPI_(I)Neighbor_alltoallw on a
!   distributed-graph directed ring.
! Every receive buffer is compared whole with the expected image: received values, gaps between
! blocks and untouched slots (-1). Rank 0 prints "coll calls <n>" (collective calls made, summed
! over ranks: the test harness compares it with sluice's `coll` statistics row) and exactly
! "PASS" when all ranks passed, else "FAIL <count>" and calls MPI_Abort.
program coll
#if defined(SLUICE_F08)
  use mpi_f08
#define COMM_T type(MPI_Comm)
#define TYPE_T type(MPI_Datatype)
#define REQ_T type(MPI_Request)
#elif !defined(SLUICE_MPIF_H)
  use mpi
#endif
  implicit none
#ifdef SLUICE_MPIF_H
  include 'mpif.h'
#endif
#ifndef SLUICE_F08
#define COMM_T integer
#define TYPE_T integer
#define REQ_T integer
#endif
  ! INTEGERs per element of `vt` (K values at stride 2) and its extent in INTEGERs.
  integer, parameter :: K = 3, W = 2 * K
  integer :: ierr, rank, nranks, errs, total, ncoll, ncoll_total, isz, it
  integer :: left, right, nbr(2), ring_src(1), ring_dst(1), reslen
  integer(kind=MPI_ADDRESS_KIND) :: lb, ext
  TYPE_T :: vtmp, vt
  COMM_T :: cart, ring
  integer :: dims(1), envlen, envstat
  logical :: periods(1), iw_derived, cart_w
  character(len=MPI_MAX_LIBRARY_VERSION_STRING) :: libver
  character(len=8) :: envval

  call MPI_Init(ierr)
  call MPI_Comm_rank(MPI_COMM_WORLD, rank, ierr)
  call MPI_Comm_size(MPI_COMM_WORLD, nranks, ierr)
  errs = 0
  ncoll = 0
  ! Open MPI 4.1's own Fortran MPI_Ialltoallw/MPI_Ineighbor_alltoallw free their converted
  ! datatype arrays when the call returns, and its libnbc reads them at completion: with a
  ! derived type in them MPI_Wait crashes (open-mpi/ompi#8763; sluice keeps its converted arrays
  ! until completion). COLL_F90_IW_PREDEFINED=1 (the harness's bare Open MPI runs) gives the
  ! nonblocking w-forms predefined types only.
  call get_environment_variable('COLL_F90_IW_PREDEFINED', envval, envlen, envstat)
  iw_derived = .not. (envstat == 0 .and. envval(1:envlen) == '1')
  ! MPICH's own mpi_f08 MPI_(I)neighbor_alltoallw asks MPI_Dist_graph_neighbors_count for the
  ! array lengths, which fails on a Cartesian communicator ("Invalid topology", MPICH 4.0 to
  ! 4.3): there the w-form runs on the distributed graph only.
  call MPI_Get_library_version(libver, reslen, ierr)
  cart_w = .true.
#ifdef SLUICE_F08
  cart_w = index(libver(1:reslen), 'MPICH') /= 1
#endif

  call MPI_Type_size(MPI_INTEGER, isz, ierr)
  call MPI_Type_vector(K, 1, 2, MPI_INTEGER, vtmp, ierr)
  lb = 0
  ext = W * isz
  call MPI_Type_create_resized(vtmp, lb, ext, vt, ierr)
  call MPI_Type_commit(vt, ierr)
  call MPI_Type_free(vtmp, ierr)

  dims(1) = nranks
  periods(1) = .false.
  call MPI_Cart_create(MPI_COMM_WORLD, 1, dims, periods, .false., cart, ierr)
  call MPI_Cart_shift(cart, 0, 1, left, right, ierr)
  nbr(1) = left
  nbr(2) = right
  ! A directed ring as a distributed graph: receive from rank - 1, send to rank + 1.
  ring_src(1) = mod(rank - 1 + nranks, nranks)
  ring_dst(1) = mod(rank + 1, nranks)
  call MPI_Dist_graph_create_adjacent(MPI_COMM_WORLD, 1, ring_src, MPI_UNWEIGHTED, 1, ring_dst, &
    MPI_UNWEIGHTED, MPI_INFO_NULL, .false., ring, ierr)

  do it = 0, 1
    call t_bcast(it == 1)
    call t_gather(it == 1)
    call t_gatherv(it == 1)
    call t_scatter(it == 1)
    call t_scatterv(it == 1)
    call t_allgather(it == 1)
    call t_allgatherv(it == 1)
    call t_alltoall(it == 1)
    call t_alltoallv(it == 1)
    call t_alltoallw(it == 1, .false.)
    call t_neighbor_allgather(it == 1)
    call t_neighbor_allgatherv(it == 1)
    call t_neighbor_alltoall(it == 1)
    call t_neighbor_alltoallv(it == 1)
    if (cart_w) call t_neighbor_alltoallw(it == 1)
    call t_ring_alltoallw(it == 1)
  end do
  call t_alltoallw(.false., .true.)

  call MPI_Comm_free(cart, ierr)
  call MPI_Comm_free(ring, ierr)
  call MPI_Type_free(vt, ierr)

  ! ---- verdict -----------------------------------------------------------------------------
  call MPI_Allreduce(errs, total, 1, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD, ierr)
  call MPI_Allreduce(ncoll, ncoll_total, 1, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD, ierr)
  if (rank == 0) then
    print '(a,i0)', 'coll calls ', ncoll_total
    if (total == 0) then
      print '(a)', 'PASS'
    else
      print '(a,i0)', 'FAIL ', total
    end if
  end if
  if (total /= 0) call MPI_Abort(MPI_COMM_WORLD, 1, ierr)
  call MPI_Finalize(ierr)

contains

  ! The j-th value of element `ev` that rank `src` sends in test `t`.
  integer function val(src, t, ev, j)
    integer, intent(in) :: src, t, ev, j
    val = t * 1000000 + src * 10000 + ev * 10 + j
  end function val

  ! K values of (src, t, ev) as one `vt` element at INTEGER offset `off` (0-based) of buf.
  subroutine putv(buf, off, src, t, ev)
    integer, intent(inout) :: buf(*)
    integer, intent(in) :: off, src, t, ev
    integer :: j
    do j = 1, K
      buf(off + 2 * j - 1) = val(src, t, ev, j)
    end do
  end subroutine putv

  ! The same K values as K contiguous INTEGERs.
  subroutine putc(buf, off, src, t, ev)
    integer, intent(inout) :: buf(*)
    integer, intent(in) :: off, src, t, ev
    integer :: j
    do j = 1, K
      buf(off + j) = val(src, t, ev, j)
    end do
  end subroutine putc

  ! A test's number: `base`, plus 50 for the nonblocking form.
  integer function tag(base, nb)
    integer, intent(in) :: base
    logical, intent(in) :: nb
    tag = base
    if (nb) tag = base + 50
  end function tag

  ! Completes a nonblocking collective (after checking the error code of the call).
  subroutine wait(req)
    REQ_T, intent(inout) :: req
    call check(ierr == MPI_SUCCESS, 'nonblocking call ierr')
    call MPI_Wait(req, MPI_STATUS_IGNORE, ierr)
    call check(ierr == MPI_SUCCESS, 'MPI_Wait ierr')
    call check(req == MPI_REQUEST_NULL, 'MPI_Wait request not null')
  end subroutine wait

  ! Records one collective call and its verdict.
  subroutine done(what, nb, ok)
    character(len=*), intent(in) :: what
    logical, intent(in) :: nb, ok
    character(len=16) :: form
    ncoll = ncoll + 1
    form = 'blocking'
    if (nb) form = 'nonblocking'
    call check(ierr == MPI_SUCCESS, what // ' ' // trim(form) // ': ierr')
    call check(ok, what // ' ' // trim(form) // ': data')
  end subroutine done

  subroutine check(ok, what)
    logical, intent(in) :: ok
    character(len=*), intent(in) :: what
    if (.not. ok) then
      errs = errs + 1
      print '(a,i0,2a)', 'rank ', rank, ': check failed: ', what
    end if
  end subroutine check

  ! Elements rank i contributes in the v-forms, and displacements (in elements) that leave
  ! one element of gap after each block.
  integer function cnt(i)
    integer, intent(in) :: i
    cnt = 1 + mod(i, 2)
  end function cnt

  subroutine gapped(counts, displs, n)
    integer, intent(in) :: n, counts(n)
    integer, intent(out) :: displs(n)
    integer :: i
    displs(1) = 0
    do i = 2, n
      displs(i) = displs(i - 1) + counts(i - 1) + 1
    end do
  end subroutine gapped

  ! ---- rooted ------------------------------------------------------------------------------
  subroutine t_bcast(nb)
    logical, intent(in) :: nb
    integer :: buf(2 * W), ex(2 * W), root, t, e
    REQ_T :: req
    t = tag(1, nb)
    root = nranks - 1
    ex = -1
    do e = 0, 1
      call putv(ex, e * W, root, t, e)
    end do
    buf = -1
    if (rank == root) buf = ex
    if (nb) then
      call MPI_Ibcast(buf, 2, vt, root, MPI_COMM_WORLD, req, ierr)
      call wait(req)
    else
      call MPI_Bcast(buf, 2, vt, root, MPI_COMM_WORLD, ierr)
    end if
    call done('bcast', nb, all(buf == ex))
  end subroutine t_bcast

  subroutine t_gather(nb)
    logical, intent(in) :: nb
    integer :: sb(W), rb(nranks * W), ex(nranks * W), root, t, i
    REQ_T :: req
    t = tag(2, nb)
    root = 0
    sb = -1
    call putv(sb, 0, rank, t, 0)
    ex = -1
    if (rank == root) then
      do i = 0, nranks - 1
        call putv(ex, i * W, i, t, 0)
      end do
    end if
    rb = -1
    if (nb) then
      call MPI_Igather(sb, 1, vt, rb, 1, vt, root, MPI_COMM_WORLD, req, ierr)
      call wait(req)
    else
      call MPI_Gather(sb, 1, vt, rb, 1, vt, root, MPI_COMM_WORLD, ierr)
    end if
    call done('gather', nb, all(rb == ex))
  end subroutine t_gather

  subroutine t_gatherv(nb)
    logical, intent(in) :: nb
    integer :: counts(nranks), displs(nranks), sb(2 * W), root, t, i, e, n
    integer, allocatable :: rb(:), ex(:)
    REQ_T :: req
    t = tag(3, nb)
    root = nranks - 1
    do i = 1, nranks
      counts(i) = cnt(i - 1)
    end do
    call gapped(counts, displs, nranks)
    n = (displs(nranks) + counts(nranks)) * W
    allocate(rb(n), ex(n))
    sb = -1
    do e = 0, cnt(rank) - 1
      call putv(sb, e * W, rank, t, e)
    end do
    ex = -1
    if (rank == root) then
      do i = 0, nranks - 1
        do e = 0, cnt(i) - 1
          call putv(ex, (displs(i + 1) + e) * W, i, t, e)
        end do
      end do
    end if
    rb = -1
    if (rank == root) then
      ! MPI_IN_PLACE: the root's own block is already in place.
      rb((displs(root + 1)) * W + 1:(displs(root + 1) + counts(root + 1)) * W) = &
        ex((displs(root + 1)) * W + 1:(displs(root + 1) + counts(root + 1)) * W)
      if (nb) then
        call MPI_Igatherv(MPI_IN_PLACE, 0, vt, rb, counts, displs, vt, root, MPI_COMM_WORLD, req, ierr)
      else
        call MPI_Gatherv(MPI_IN_PLACE, 0, vt, rb, counts, displs, vt, root, MPI_COMM_WORLD, ierr)
      end if
    else
      if (nb) then
        call MPI_Igatherv(sb, cnt(rank), vt, rb, counts, displs, vt, root, MPI_COMM_WORLD, req, ierr)
      else
        call MPI_Gatherv(sb, cnt(rank), vt, rb, counts, displs, vt, root, MPI_COMM_WORLD, ierr)
      end if
    end if
    if (nb) call wait(req)
    call done('gatherv', nb, all(rb == ex))
  end subroutine t_gatherv

  subroutine t_scatter(nb)
    logical, intent(in) :: nb
    integer :: sb(nranks * W), rb(W), ex(W), root, t, i
    REQ_T :: req
    t = tag(4, nb)
    root = 0
    sb = -1
    if (rank == root) then
      do i = 0, nranks - 1
        call putv(sb, i * W, root, t, i)
      end do
    end if
    ex = -1
    call putv(ex, 0, root, t, rank)
    rb = -1
    if (nb) then
      call MPI_Iscatter(sb, 1, vt, rb, 1, vt, root, MPI_COMM_WORLD, req, ierr)
      call wait(req)
    else
      call MPI_Scatter(sb, 1, vt, rb, 1, vt, root, MPI_COMM_WORLD, ierr)
    end if
    call done('scatter', nb, all(rb == ex))
  end subroutine t_scatter

  subroutine t_scatterv(nb)
    logical, intent(in) :: nb
    integer :: counts(nranks), displs(nranks), rb(2 * K + 1), ex(2 * K + 1), root, t, i, e
    integer, allocatable :: sb(:)
    REQ_T :: req
    t = tag(5, nb)
    root = mod(1, nranks)
    do i = 1, nranks
      counts(i) = cnt(i - 1)
    end do
    call gapped(counts, displs, nranks)
    allocate(sb((displs(nranks) + counts(nranks)) * W))
    sb = -1
    do i = 0, nranks - 1
      do e = 0, cnt(i) - 1
        call putv(sb, (displs(i + 1) + e) * W, root, t, 10 * i + e)
      end do
    end do
    ! Received as plain INTEGERs (the same type signature); the root keeps its block in place.
    ex = -1
    if (rank /= root) then
      do e = 0, cnt(rank) - 1
        call putc(ex, e * K, root, t, 10 * rank + e)
      end do
    end if
    rb = -1
    if (rank == root) then
      if (nb) then
        call MPI_Iscatterv(sb, counts, displs, vt, MPI_IN_PLACE, 0, MPI_INTEGER, root, MPI_COMM_WORLD, req, ierr)
      else
        call MPI_Scatterv(sb, counts, displs, vt, MPI_IN_PLACE, 0, MPI_INTEGER, root, MPI_COMM_WORLD, ierr)
      end if
    else
      if (nb) then
        call MPI_Iscatterv(sb, counts, displs, vt, rb, K * cnt(rank), MPI_INTEGER, root, MPI_COMM_WORLD, req, ierr)
      else
        call MPI_Scatterv(sb, counts, displs, vt, rb, K * cnt(rank), MPI_INTEGER, root, MPI_COMM_WORLD, ierr)
      end if
    end if
    if (nb) call wait(req)
    call done('scatterv', nb, all(rb == ex))
  end subroutine t_scatterv

  ! ---- all to all --------------------------------------------------------------------------
  subroutine t_allgather(nb)
    logical, intent(in) :: nb
    integer :: rb(nranks * W), ex(nranks * W), t, i
    REQ_T :: req
    t = tag(6, nb)
    ex = -1
    do i = 0, nranks - 1
      call putv(ex, i * W, i, t, 0)
    end do
    ! MPI_IN_PLACE: the own block is in the receive buffer.
    rb = -1
    call putv(rb, rank * W, rank, t, 0)
    if (nb) then
      call MPI_Iallgather(MPI_IN_PLACE, 0, vt, rb, 1, vt, MPI_COMM_WORLD, req, ierr)
      call wait(req)
    else
      call MPI_Allgather(MPI_IN_PLACE, 0, vt, rb, 1, vt, MPI_COMM_WORLD, ierr)
    end if
    call done('allgather', nb, all(rb == ex))
  end subroutine t_allgather

  subroutine t_allgatherv(nb)
    logical, intent(in) :: nb
    integer :: counts(nranks), displs(nranks), sb(2 * W), t, i, e, n
    integer, allocatable :: rb(:), ex(:)
    REQ_T :: req
    t = tag(7, nb)
    do i = 1, nranks
      counts(i) = cnt(i - 1)
    end do
    call gapped(counts, displs, nranks)
    n = (displs(nranks) + counts(nranks)) * W
    allocate(rb(n), ex(n))
    sb = -1
    do e = 0, cnt(rank) - 1
      call putv(sb, e * W, rank, t, e)
    end do
    ex = -1
    do i = 0, nranks - 1
      do e = 0, cnt(i) - 1
        call putv(ex, (displs(i + 1) + e) * W, i, t, e)
      end do
    end do
    rb = -1
    if (nb) then
      call MPI_Iallgatherv(sb, cnt(rank), vt, rb, counts, displs, vt, MPI_COMM_WORLD, req, ierr)
      call wait(req)
    else
      call MPI_Allgatherv(sb, cnt(rank), vt, rb, counts, displs, vt, MPI_COMM_WORLD, ierr)
    end if
    call done('allgatherv', nb, all(rb == ex))
  end subroutine t_allgatherv

  subroutine t_alltoall(nb)
    logical, intent(in) :: nb
    integer :: sb(nranks * W), rb(nranks * W), ex(nranks * W), t, i
    REQ_T :: req
    t = tag(8, nb)
    sb = -1
    ex = -1
    do i = 0, nranks - 1
      call putv(sb, i * W, rank, t, i)
      call putv(ex, i * W, i, t, rank)
    end do
    rb = -1
    if (nb) then
      call MPI_Ialltoall(sb, 1, vt, rb, 1, vt, MPI_COMM_WORLD, req, ierr)
      call wait(req)
    else
      call MPI_Alltoall(sb, 1, vt, rb, 1, vt, MPI_COMM_WORLD, ierr)
    end if
    call done('alltoall', nb, all(rb == ex))
  end subroutine t_alltoall

  subroutine t_alltoallv(nb)
    logical, intent(in) :: nb
    integer :: scounts(nranks), sdispls(nranks), rcounts(nranks), rdispls(nranks), t, i, e
    integer, allocatable :: sb(:), rb(:), ex(:)
    REQ_T :: req
    t = tag(9, nb)
    do i = 1, nranks
      scounts(i) = 1 + mod(rank + i - 1, 2)
      rcounts(i) = 1 + mod(i - 1 + rank, 2)
    end do
    call gapped(scounts, sdispls, nranks)
    call gapped(rcounts, rdispls, nranks)
    allocate(sb((sdispls(nranks) + scounts(nranks)) * W))
    allocate(rb((rdispls(nranks) + rcounts(nranks)) * W), ex((rdispls(nranks) + rcounts(nranks)) * W))
    sb = -1
    ex = -1
    do i = 0, nranks - 1
      do e = 0, scounts(i + 1) - 1
        call putv(sb, (sdispls(i + 1) + e) * W, rank, t, 10 * i + e)
      end do
      do e = 0, rcounts(i + 1) - 1
        call putv(ex, (rdispls(i + 1) + e) * W, i, t, 10 * rank + e)
      end do
    end do
    rb = -1
    if (nb) then
      call MPI_Ialltoallv(sb, scounts, sdispls, vt, rb, rcounts, rdispls, vt, MPI_COMM_WORLD, req, ierr)
      call wait(req)
    else
      call MPI_Alltoallv(sb, scounts, sdispls, vt, rb, rcounts, rdispls, vt, MPI_COMM_WORLD, ierr)
    end if
    call done('alltoallv', nb, all(rb == ex))
  end subroutine t_alltoallv

  ! A type per peer: `vt` (1 element) for even peers, K plain INTEGERs for odd ones on the send
  ! side; on the receive side by the parity of peer + rank (the signature is K INTEGERs either
  ! way). Block i at byte displacement i * (W + 2) INTEGERs. Without `iw_derived` the
  ! nonblocking form has K plain INTEGERs for every peer.
  subroutine t_alltoallw(nb, in_place)
    logical, intent(in) :: nb, in_place
    integer :: scounts(nranks), sdispls(nranks), rcounts(nranks), rdispls(nranks), t, i
    TYPE_T :: stypes(nranks), rtypes(nranks)
    integer :: sb(nranks * (W + 2)), rb(nranks * (W + 2)), ex(nranks * (W + 2))
    logical :: derived
    REQ_T :: req
    derived = iw_derived .or. .not. nb
    t = tag(10, nb)
    if (in_place) t = 11
    sb = -1
    ex = -1
    rb = -1
    do i = 0, nranks - 1
      sdispls(i + 1) = i * (W + 2) * isz
      rdispls(i + 1) = i * (W + 2) * isz
      if (mod(i, 2) == 0 .and. derived) then
        stypes(i + 1) = vt
        scounts(i + 1) = 1
        call putv(sb, i * (W + 2), rank, t, i)
      else
        stypes(i + 1) = MPI_INTEGER
        scounts(i + 1) = K
        call putc(sb, i * (W + 2), rank, t, i)
      end if
      if (mod(i + rank, 2) == 0 .and. derived) then
        rtypes(i + 1) = vt
        rcounts(i + 1) = 1
        call putv(ex, i * (W + 2), i, t, rank)
        if (in_place) call putv(rb, i * (W + 2), rank, t, i)
      else
        rtypes(i + 1) = MPI_INTEGER
        rcounts(i + 1) = K
        call putc(ex, i * (W + 2), i, t, rank)
        if (in_place) call putc(rb, i * (W + 2), rank, t, i)
      end if
    end do
    if (in_place) then
      call MPI_Alltoallw(MPI_IN_PLACE, rcounts, rdispls, rtypes, rb, rcounts, rdispls, rtypes, MPI_COMM_WORLD, ierr)
      call done('alltoallw in place', nb, all(rb == ex))
      return
    end if
    if (nb) then
      call MPI_Ialltoallw(sb, scounts, sdispls, stypes, rb, rcounts, rdispls, rtypes, MPI_COMM_WORLD, req, ierr)
      call wait(req)
    else
      call MPI_Alltoallw(sb, scounts, sdispls, stypes, rb, rcounts, rdispls, rtypes, MPI_COMM_WORLD, ierr)
    end if
    call done('alltoallw', nb, all(rb == ex))
  end subroutine t_alltoallw

  ! ---- neighborhood (1-D, non-periodic: slot 1 is the left neighbor, slot 2 the right one;
  ! a neighbor sends to this rank on its slot 3 - d; MPI_PROC_NULL slots stay untouched) ------
  subroutine t_neighbor_allgather(nb)
    logical, intent(in) :: nb
    integer :: sb(W), rb(2 * W), ex(2 * W), t, d
    REQ_T :: req
    t = tag(12, nb)
    sb = -1
    call putv(sb, 0, rank, t, 0)
    ex = -1
    do d = 1, 2
      if (nbr(d) /= MPI_PROC_NULL) call putv(ex, (d - 1) * W, nbr(d), t, 0)
    end do
    rb = -1
    if (nb) then
      call MPI_Ineighbor_allgather(sb, 1, vt, rb, 1, vt, cart, req, ierr)
      call wait(req)
    else
      call MPI_Neighbor_allgather(sb, 1, vt, rb, 1, vt, cart, ierr)
    end if
    call done('neighbor_allgather', nb, all(rb == ex))
  end subroutine t_neighbor_allgather

  subroutine t_neighbor_allgatherv(nb)
    logical, intent(in) :: nb
    integer :: sb(2 * W), rb(5 * W), ex(5 * W), counts(2), displs(2), t, d, e
    REQ_T :: req
    t = tag(13, nb)
    sb = -1
    do e = 0, cnt(rank) - 1
      call putv(sb, e * W, rank, t, e)
    end do
    ex = -1
    do d = 1, 2
      counts(d) = 1
      if (nbr(d) /= MPI_PROC_NULL) counts(d) = cnt(nbr(d))
    end do
    displs(1) = 0
    displs(2) = 3
    do d = 1, 2
      if (nbr(d) == MPI_PROC_NULL) cycle
      do e = 0, counts(d) - 1
        call putv(ex, (displs(d) + e) * W, nbr(d), t, e)
      end do
    end do
    rb = -1
    if (nb) then
      call MPI_Ineighbor_allgatherv(sb, cnt(rank), vt, rb, counts, displs, vt, cart, req, ierr)
      call wait(req)
    else
      call MPI_Neighbor_allgatherv(sb, cnt(rank), vt, rb, counts, displs, vt, cart, ierr)
    end if
    call done('neighbor_allgatherv', nb, all(rb == ex))
  end subroutine t_neighbor_allgatherv

  subroutine t_neighbor_alltoall(nb)
    logical, intent(in) :: nb
    integer :: sb(2 * W), rb(2 * W), ex(2 * W), t, d
    REQ_T :: req
    t = tag(14, nb)
    sb = -1
    ex = -1
    do d = 1, 2
      call putv(sb, (d - 1) * W, rank, t, d)
      if (nbr(d) /= MPI_PROC_NULL) call putv(ex, (d - 1) * W, nbr(d), t, 3 - d)
    end do
    rb = -1
    if (nb) then
      call MPI_Ineighbor_alltoall(sb, 1, vt, rb, 1, vt, cart, req, ierr)
      call wait(req)
    else
      call MPI_Neighbor_alltoall(sb, 1, vt, rb, 1, vt, cart, ierr)
    end if
    call done('neighbor_alltoall', nb, all(rb == ex))
  end subroutine t_neighbor_alltoall

  ! Slot d sends d elements; a neighbor thus receives 3 - d from this rank's slot d.
  subroutine t_neighbor_alltoallv(nb)
    logical, intent(in) :: nb
    integer :: sb(4 * W), rb(4 * W), ex(4 * W), scounts(2), sdispls(2), rcounts(2), rdispls(2)
    integer :: t, d, e
    REQ_T :: req
    t = tag(15, nb)
    sb = -1
    ex = -1
    do d = 1, 2
      scounts(d) = d
      rcounts(d) = 3 - d
    end do
    sdispls(1) = 0
    sdispls(2) = 2
    rdispls(1) = 0
    rdispls(2) = 3
    do d = 1, 2
      do e = 0, scounts(d) - 1
        call putv(sb, (sdispls(d) + e) * W, rank, t, 10 * d + e)
      end do
      if (nbr(d) == MPI_PROC_NULL) cycle
      do e = 0, rcounts(d) - 1
        call putv(ex, (rdispls(d) + e) * W, nbr(d), t, 10 * (3 - d) + e)
      end do
    end do
    rb = -1
    if (nb) then
      call MPI_Ineighbor_alltoallv(sb, scounts, sdispls, vt, rb, rcounts, rdispls, vt, cart, req, ierr)
      call wait(req)
    else
      call MPI_Neighbor_alltoallv(sb, scounts, sdispls, vt, rb, rcounts, rdispls, vt, cart, ierr)
    end if
    call done('neighbor_alltoallv', nb, all(rb == ex))
  end subroutine t_neighbor_alltoallv

  ! Slot 1 (left) sends `vt`, slot 2 (right) K plain INTEGERs; so from the left (its slot 2)
  ! this rank receives K INTEGERs, as `vt`, and from the right (its slot 1) a `vt`, as K plain
  ! INTEGERs. Byte displacements are INTEGER(KIND=MPI_ADDRESS_KIND). Without `iw_derived` the
  ! nonblocking form has K plain INTEGERs on both slots.
  subroutine t_neighbor_alltoallw(nb)
    logical, intent(in) :: nb
    integer :: sb(2 * (W + 2)), rb(2 * (W + 2)), ex(2 * (W + 2)), scounts(2), rcounts(2), t, d
    integer(kind=MPI_ADDRESS_KIND) :: sdispls(2), rdispls(2)
    TYPE_T :: stypes(2), rtypes(2)
    logical :: derived
    REQ_T :: req
    derived = iw_derived .or. .not. nb
    t = tag(16, nb)
    sb = -1
    ex = -1
    do d = 1, 2
      sdispls(d) = (d - 1) * (W + 2) * isz
      rdispls(d) = (d - 1) * (W + 2) * isz
      stypes(d) = MPI_INTEGER
      scounts(d) = K
      rtypes(d) = MPI_INTEGER
      rcounts(d) = K
    end do
    if (derived) then
      stypes(1) = vt
      scounts(1) = 1
      call putv(sb, 0, rank, t, 1)
      rtypes(1) = vt
      rcounts(1) = 1
      if (left /= MPI_PROC_NULL) call putv(ex, 0, left, t, 2)
    else
      call putc(sb, 0, rank, t, 1)
      if (left /= MPI_PROC_NULL) call putc(ex, 0, left, t, 2)
    end if
    call putc(sb, W + 2, rank, t, 2)
    if (right /= MPI_PROC_NULL) call putc(ex, W + 2, right, t, 1)
    rb = -1
    if (nb) then
      call MPI_Ineighbor_alltoallw(sb, scounts, sdispls, stypes, rb, rcounts, rdispls, rtypes, cart, req, ierr)
      call wait(req)
    else
      call MPI_Neighbor_alltoallw(sb, scounts, sdispls, stypes, rb, rcounts, rdispls, rtypes, cart, ierr)
    end if
    call done('neighbor_alltoallw', nb, all(rb == ex))
  end subroutine t_neighbor_alltoallw

  ! On the directed ring: one `vt` to rank + 1, received from rank - 1 as K plain INTEGERs
  ! (plain INTEGERs both ways without `iw_derived` in the nonblocking form).
  subroutine t_ring_alltoallw(nb)
    logical, intent(in) :: nb
    integer :: sb(W), rb(W), ex(W), scounts(1), rcounts(1), t
    integer(kind=MPI_ADDRESS_KIND) :: sdispls(1), rdispls(1)
    TYPE_T :: stypes(1), rtypes(1)
    REQ_T :: req
    t = tag(17, nb)
    sdispls(1) = 0
    rdispls(1) = isz
    sb = -1
    if (iw_derived .or. .not. nb) then
      stypes(1) = vt
      scounts(1) = 1
      call putv(sb, 0, rank, t, 0)
    else
      stypes(1) = MPI_INTEGER
      scounts(1) = K
      call putc(sb, 0, rank, t, 0)
    end if
    rtypes(1) = MPI_INTEGER
    rcounts(1) = K
    ex = -1
    call putc(ex, 1, ring_src(1), t, 0)
    rb = -1
    if (nb) then
      call MPI_Ineighbor_alltoallw(sb, scounts, sdispls, stypes, rb, rcounts, rdispls, rtypes, ring, req, ierr)
      call wait(req)
    else
      call MPI_Neighbor_alltoallw(sb, scounts, sdispls, stypes, rb, rcounts, rdispls, rtypes, ring, ierr)
    end if
    call done('ring neighbor_alltoallw', nb, all(rb == ex))
  end subroutine t_ring_alltoallw

end program coll
