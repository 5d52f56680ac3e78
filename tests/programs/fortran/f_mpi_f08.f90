! Fortran test program (`use mpi_f08`) for the recorder's Fortran bindings: the same
! communication as f_mpi.f90, through the Fortran 2008 bindings.
!
! Run on 4 ranks. The communication pattern is fixed (the test checks every call):
!   ring        MPI_SEND/MPI_RECV, 10 INTEGER, tag 11, to rank+1 / from rank-1
!   round 1     2 MPI_IRECV + 2 MPI_ISEND of 5 DOUBLE PRECISION (tag 21 to next, 22 to prev),
!               MPI_WAITALL with a status array
!   round 2     same with 6 INTEGER (tags 31, 32), MPI_WAITALL with MPI_STATUSES_IGNORE
!   wildcard    rank 0: MPI_IRECV(MPI_ANY_SOURCE, tag 41) of 3 INTEGER, MPI_WAIT with
!               MPI_STATUS_IGNORE; the last rank sends it with MPI_SEND
!   MPI_BCAST   7 INTEGER from root 1
!   MPI_ALLREDUCE 3 DOUBLE PRECISION, MPI_SUM
!   MPI_BARRIER
!   MPI_COMM_SPLIT by rank parity, key rank; split rank 0 sends 4 DOUBLE PRECISION, tag 51,
!               to split rank 1 (world ranks 0 -> 2, 1 -> 3)
!   MPI_FINALIZE
! Rank 0 prints a checksum of everything received.
program f_mpi_f08
  use mpi_f08
  implicit none
  integer :: ierr, rank, nprocs, next, prev, i
  integer :: sbuf(10), rbuf(10)
  type(MPI_Status) :: status
  type(MPI_Request) :: reqs(4)
  type(MPI_Status) :: stats(4)
  double precision :: dout(5, 2), din(5, 2)
  integer :: iout(6, 2), iin(6, 2)
  integer :: wild(3)
  type(MPI_Request) :: wreq
  integer :: bval(7)
  double precision :: dsum(3), dres(3)
  double precision :: sub(4)
  type(MPI_Comm) :: subcomm
  integer :: subrank, subsize
  double precision :: local

  call MPI_INIT(ierr)
  call MPI_COMM_RANK(MPI_COMM_WORLD, rank, ierr)
  call MPI_COMM_SIZE(MPI_COMM_WORLD, nprocs, ierr)
  next = mod(rank + 1, nprocs)
  prev = mod(rank + nprocs - 1, nprocs)
  local = 0d0

  ! Ring.
  do i = 1, 10
    sbuf(i) = rank * 100 + i
  end do
  if (rank == 0) then
    call MPI_SEND(sbuf, 10, MPI_INTEGER, next, 11, MPI_COMM_WORLD, ierr)
    call MPI_RECV(rbuf, 10, MPI_INTEGER, prev, 11, MPI_COMM_WORLD, status, ierr)
  else
    call MPI_RECV(rbuf, 10, MPI_INTEGER, prev, 11, MPI_COMM_WORLD, status, ierr)
    call MPI_SEND(sbuf, 10, MPI_INTEGER, next, 11, MPI_COMM_WORLD, ierr)
  end if
  local = local + sum(rbuf)

  ! Round 1: doubles, statuses kept.
  do i = 1, 5
    dout(i, 1) = rank + i * 0.5d0
    dout(i, 2) = rank - i * 0.25d0
  end do
  call MPI_IRECV(din(1, 1), 5, MPI_DOUBLE_PRECISION, prev, 21, MPI_COMM_WORLD, reqs(1), ierr)
  call MPI_IRECV(din(1, 2), 5, MPI_DOUBLE_PRECISION, next, 22, MPI_COMM_WORLD, reqs(2), ierr)
  call MPI_ISEND(dout(1, 1), 5, MPI_DOUBLE_PRECISION, next, 21, MPI_COMM_WORLD, reqs(3), ierr)
  call MPI_ISEND(dout(1, 2), 5, MPI_DOUBLE_PRECISION, prev, 22, MPI_COMM_WORLD, reqs(4), ierr)
  call MPI_WAITALL(4, reqs, stats, ierr)
  local = local + sum(din)
  if (stats(1)%MPI_SOURCE /= prev .or. stats(2)%MPI_TAG /= 22) then
    print *, 'bad statuses on rank', rank
  end if

  ! Round 2: integers, statuses ignored.
  do i = 1, 6
    iout(i, 1) = rank * 7 + i
    iout(i, 2) = rank * 11 - i
  end do
  call MPI_IRECV(iin(1, 1), 6, MPI_INTEGER, prev, 31, MPI_COMM_WORLD, reqs(1), ierr)
  call MPI_IRECV(iin(1, 2), 6, MPI_INTEGER, next, 32, MPI_COMM_WORLD, reqs(2), ierr)
  call MPI_ISEND(iout(1, 1), 6, MPI_INTEGER, next, 31, MPI_COMM_WORLD, reqs(3), ierr)
  call MPI_ISEND(iout(1, 2), 6, MPI_INTEGER, prev, 32, MPI_COMM_WORLD, reqs(4), ierr)
  call MPI_WAITALL(4, reqs, MPI_STATUSES_IGNORE, ierr)
  local = local + sum(iin)

  ! Wildcard receive completed by MPI_WAIT with MPI_STATUS_IGNORE.
  if (rank == 0) then
    call MPI_IRECV(wild, 3, MPI_INTEGER, MPI_ANY_SOURCE, 41, MPI_COMM_WORLD, wreq, ierr)
    call MPI_WAIT(wreq, MPI_STATUS_IGNORE, ierr)
    local = local + sum(wild)
  else if (rank == nprocs - 1) then
    wild = (/ 5, 6, 7 /)
    call MPI_SEND(wild, 3, MPI_INTEGER, 0, 41, MPI_COMM_WORLD, ierr)
  end if

  ! Collectives.
  do i = 1, 7
    bval(i) = 0
    if (rank == 1) bval(i) = i * i
  end do
  call MPI_BCAST(bval, 7, MPI_INTEGER, 1, MPI_COMM_WORLD, ierr)
  local = local + sum(bval)

  ! Split communicator.
  call MPI_COMM_SPLIT(MPI_COMM_WORLD, mod(rank, 2), rank, subcomm, ierr)
  call MPI_COMM_RANK(subcomm, subrank, ierr)
  call MPI_COMM_SIZE(subcomm, subsize, ierr)
  if (subsize >= 2) then
    if (subrank == 0) then
      do i = 1, 4
        sub(i) = rank * 1.5d0 + i
      end do
      call MPI_SEND(sub, 4, MPI_DOUBLE_PRECISION, 1, 51, subcomm, ierr)
    else if (subrank == 1) then
      call MPI_RECV(sub, 4, MPI_DOUBLE_PRECISION, 0, 51, subcomm, status, ierr)
      local = local + sum(sub)
    end if
  end if

  dsum(1) = rank + 1
  dsum(2) = local
  dsum(3) = subrank
  call MPI_ALLREDUCE(dsum, dres, 3, MPI_DOUBLE_PRECISION, MPI_SUM, MPI_COMM_WORLD, ierr)
  call MPI_BARRIER(MPI_COMM_WORLD, ierr)
  if (rank == 0) then
    write (*, '(A, I0, A, F0.3, A, F0.3, A, F0.3)') 'ranks ', nprocs, ' checksum ', dres(1), ' ', dres(2), ' ', dres(3)
  end if
  call MPI_FINALIZE(ierr)
end program f_mpi_f08
