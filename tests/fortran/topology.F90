! Topology constructors with REORDER = .TRUE. from Fortran (the mpi module, or -DF08 mpi_f08):
! LOGICAL arguments, MPI_UNWEIGHTED and weights arrays must reach sluice's reordering
! (docs/mapping.md) as the C calls do. Every communicator is checked against what it was given:
! the Cartesian ring's shifts and periods, the graph ring's neighbours, each distributed-graph
! rank's neighbours (those of its vertex) and weights, and a message to every out-neighbour.
! Argument "improve": the rings must cross nodes strictly less often than with .FALSE.
! (the test passes it where ring neighbours start on different nodes).
#ifdef F08
#define COMM_T type(MPI_Comm)
#else
#define COMM_T integer
#endif
program topology
#ifdef F08
  use mpi_f08
#else
  use mpi
#endif
  implicit none
  integer :: rank, nprocs, ierr, r, v, src, dst, got, bad, k(0:1), ni, no, i
  integer :: dims(1), gd(1), coords(1), from(1), to(1), nb(2), w(2), ins(2), outs(2), inw(2), outw(2)
  integer, allocatable :: index(:), edges(:)
  logical :: periods(1), gp(1), improve, weighted
  character(len=16) :: arg
  COMM_T :: c(0:1)

  call MPI_INIT(ierr)
  call MPI_COMM_RANK(MPI_COMM_WORLD, rank, ierr)
  call MPI_COMM_SIZE(MPI_COMM_WORLD, nprocs, ierr)
  arg = ''
  if (command_argument_count() > 0) call get_command_argument(1, arg)
  improve = trim(arg) == 'improve'
  bad = 0

  ! Cartesian ring.
  dims(1) = nprocs
  periods(1) = .true.
  do r = 0, 1
    call MPI_CART_CREATE(MPI_COMM_WORLD, 1, dims, periods, r == 1, c(r), ierr)
    call MPI_COMM_RANK(c(r), v, ierr)
    if (r == 0 .and. v /= rank) bad = bad + 1
    call MPI_CART_GET(c(r), 1, gd, gp, coords, ierr)
    if (gd(1) /= nprocs .or. .not. gp(1) .or. coords(1) /= v) bad = bad + 1
    call MPI_CART_SHIFT(c(r), 0, 1, src, dst, ierr)
    call MPI_SENDRECV(v, 1, MPI_INTEGER, dst, 7, got, 1, MPI_INTEGER, src, 7, c(r), MPI_STATUS_IGNORE, ierr)
    if (got /= src) bad = bad + 1
    k(r) = crossings(c(r), dst)
  end do
  call verdict_crossings('cart ring')
  do r = 0, 1
    call MPI_COMM_FREE(c(r), ierr)
  end do

  ! Graph ring (one edge for two ranks).
  allocate(index(nprocs), edges(2 * nprocs))
  i = 0
  do v = 0, nprocs - 1
    i = i + 1
    edges(i) = mod(v + 1, nprocs)
    if (nprocs > 2) then
      i = i + 1
      edges(i) = mod(v + nprocs - 1, nprocs)
    end if
    index(v + 1) = i
  end do
  do r = 0, 1
    call MPI_GRAPH_CREATE(MPI_COMM_WORLD, nprocs, index, edges, r == 1, c(r), ierr)
    call MPI_COMM_RANK(c(r), v, ierr)
    call MPI_GRAPH_NEIGHBORS_COUNT(c(r), v, ni, ierr)
    call MPI_GRAPH_NEIGHBORS(c(r), v, 2, outs, ierr)
    if (ni /= min(2, nprocs - 1) .or. outs(1) /= mod(v + 1, nprocs)) bad = bad + 1
    call MPI_SENDRECV(v, 1, MPI_INTEGER, outs(1), 8, got, 1, MPI_INTEGER, mod(v + nprocs - 1, nprocs), 8, c(r), &
                      MPI_STATUS_IGNORE, ierr)
    if (got /= mod(v + nprocs - 1, nprocs)) bad = bad + 1
    k(r) = crossings(c(r), outs(1))
  end do
  call verdict_crossings('graph ring')
  do r = 0, 1
    call MPI_COMM_FREE(c(r), ierr)
  end do

  ! Distributed graph, adjacent, weighted ring both ways: vertex v's edges, given by rank v.
  nb(1) = mod(rank + 1, nprocs)
  nb(2) = mod(rank + nprocs - 1, nprocs)
  w = 3
  ni = min(2, nprocs - 1)
  do r = 0, 1
    call MPI_DIST_GRAPH_CREATE_ADJACENT(MPI_COMM_WORLD, ni, nb, w, ni, nb, w, MPI_INFO_NULL, r == 1, c(r), ierr)
    call MPI_COMM_RANK(c(r), v, ierr)
    call MPI_DIST_GRAPH_NEIGHBORS_COUNT(c(r), i, no, weighted, ierr)
    call MPI_DIST_GRAPH_NEIGHBORS(c(r), 2, ins, inw, 2, outs, outw, ierr)
    if (i /= ni .or. no /= ni .or. .not. weighted .or. inw(1) /= 3 .or. outw(1) /= 3) bad = bad + 1
    if (ins(1) /= mod(v + 1, nprocs) .or. outs(1) /= mod(v + 1, nprocs)) bad = bad + 1
    k(r) = crossings(c(r), outs(1))
  end do
  call verdict_crossings('dist graph adjacent')
  do r = 0, 1
    call MPI_COMM_FREE(c(r), ierr)
  end do

  ! Distributed graph, adjacent, unweighted directed ring.
  from(1) = mod(rank + nprocs - 1, nprocs)
  to(1) = mod(rank + 1, nprocs)
  do r = 0, 1
    call MPI_DIST_GRAPH_CREATE_ADJACENT(MPI_COMM_WORLD, 1, from, MPI_UNWEIGHTED, 1, to, MPI_UNWEIGHTED, &
                                        MPI_INFO_NULL, r == 1, c(r), ierr)
    call MPI_COMM_RANK(c(r), v, ierr)
    call MPI_DIST_GRAPH_NEIGHBORS_COUNT(c(r), i, no, weighted, ierr)
    call MPI_DIST_GRAPH_NEIGHBORS(c(r), 1, ins, MPI_UNWEIGHTED, 1, outs, MPI_UNWEIGHTED, ierr)
    if (weighted .or. i /= 1 .or. no /= 1) bad = bad + 1
    if (ins(1) /= mod(v + nprocs - 1, nprocs) .or. outs(1) /= mod(v + 1, nprocs)) bad = bad + 1
    call MPI_SENDRECV(v, 1, MPI_INTEGER, outs(1), 9, got, 1, MPI_INTEGER, ins(1), 9, c(r), MPI_STATUS_IGNORE, ierr)
    if (got /= ins(1)) bad = bad + 1
    k(r) = crossings(c(r), outs(1))
  end do
  call verdict_crossings('dist graph directed')
  do r = 0, 1
    call MPI_COMM_FREE(c(r), ierr)
  end do

  ! Distributed graph, general, unweighted: each rank gives its vertex's out-edge.
  do r = 0, 1
    call MPI_DIST_GRAPH_CREATE(MPI_COMM_WORLD, 1, (/ rank /), (/ 1 /), to, MPI_UNWEIGHTED, MPI_INFO_NULL, &
                               r == 1, c(r), ierr)
    call MPI_COMM_RANK(c(r), v, ierr)
    call MPI_DIST_GRAPH_NEIGHBORS(c(r), 1, ins, MPI_UNWEIGHTED, 1, outs, MPI_UNWEIGHTED, ierr)
    if (ins(1) /= mod(v + nprocs - 1, nprocs) .or. outs(1) /= mod(v + 1, nprocs)) bad = bad + 1
    k(r) = crossings(c(r), outs(1))
  end do
  call verdict_crossings('dist graph general')
  do r = 0, 1
    call MPI_COMM_FREE(c(r), ierr)
  end do

  call MPI_ALLREDUCE(MPI_IN_PLACE, bad, 1, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD, ierr)
  if (rank == 0) then
    if (bad == 0) then
      print '(a)', 'PASS'
    else
      print '(a,i0)', 'FAIL ', bad
    end if
  end if
  call MPI_FINALIZE(ierr)

contains

  ! Ranks of comm whose edge to `peer` leaves their node, summed over comm.
  integer function crossings(comm, peer)
    COMM_T, intent(in) :: comm
    integer, intent(in) :: peer
    COMM_T :: shm
    integer :: me, leader, n, mine, e
    integer, allocatable :: node(:)
    call MPI_COMM_RANK(comm, me, e)
    call MPI_COMM_SIZE(comm, n, e)
    call MPI_COMM_SPLIT_TYPE(comm, MPI_COMM_TYPE_SHARED, me, MPI_INFO_NULL, shm, e)
    leader = me
    call MPI_BCAST(leader, 1, MPI_INTEGER, 0, shm, e)
    call MPI_COMM_FREE(shm, e)
    allocate(node(0:n - 1))
    call MPI_ALLGATHER(leader, 1, MPI_INTEGER, node, 1, MPI_INTEGER, comm, e)
    mine = 0
    if (node(peer) /= node(me)) mine = 1
    call MPI_ALLREDUCE(mine, crossings, 1, MPI_INTEGER, MPI_SUM, comm, e)
  end function

  subroutine verdict_crossings(what)
    character(len=*), intent(in) :: what
    if (k(1) > k(0)) bad = bad + 1
    if (improve .and. k(1) >= k(0)) bad = bad + 1
    if (rank == 0) print '(a,a,i0,a,i0)', what, ': crossings ', k(1), ' with reorder, without ', k(0)
  end subroutine
end program
