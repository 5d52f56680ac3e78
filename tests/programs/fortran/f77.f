C     Fortran 77 test program (include 'mpif.h') for the recorder's
C     Fortran bindings: the same communication as f_mpi.f90 (see there),
C     on 4 ranks. Rank 0 prints a checksum of everything received.
      PROGRAM F77
      IMPLICIT NONE
      INCLUDE 'mpif.h'
      INTEGER IERR, RANK, NPROCS, NEXT, PREV, I
      INTEGER SBUF(10), RBUF(10)
      INTEGER STATUS(MPI_STATUS_SIZE)
      INTEGER REQS(4), STATS(MPI_STATUS_SIZE, 4)
      DOUBLE PRECISION DOUT(5, 2), DIN(5, 2)
      INTEGER IOUT(6, 2), IIN(6, 2)
      INTEGER WILD(3), WREQ
      INTEGER BVAL(7)
      DOUBLE PRECISION DSUM(3), DRES(3)
      DOUBLE PRECISION SUB(4)
      INTEGER SUBCOM, SUBRNK, SUBSIZ
      DOUBLE PRECISION LOCAL

      CALL MPI_INIT(IERR)
      CALL MPI_COMM_RANK(MPI_COMM_WORLD, RANK, IERR)
      CALL MPI_COMM_SIZE(MPI_COMM_WORLD, NPROCS, IERR)
      NEXT = MOD(RANK + 1, NPROCS)
      PREV = MOD(RANK + NPROCS - 1, NPROCS)
      LOCAL = 0D0

C     Ring.
      DO 10 I = 1, 10
        SBUF(I) = RANK * 100 + I
   10 CONTINUE
      IF (RANK .EQ. 0) THEN
        CALL MPI_SEND(SBUF, 10, MPI_INTEGER, NEXT, 11,
     &                MPI_COMM_WORLD, IERR)
        CALL MPI_RECV(RBUF, 10, MPI_INTEGER, PREV, 11,
     &                MPI_COMM_WORLD, STATUS, IERR)
      ELSE
        CALL MPI_RECV(RBUF, 10, MPI_INTEGER, PREV, 11,
     &                MPI_COMM_WORLD, STATUS, IERR)
        CALL MPI_SEND(SBUF, 10, MPI_INTEGER, NEXT, 11,
     &                MPI_COMM_WORLD, IERR)
      END IF
      DO 11 I = 1, 10
        LOCAL = LOCAL + RBUF(I)
   11 CONTINUE

C     Round 1: doubles, statuses kept.
      DO 20 I = 1, 5
        DOUT(I, 1) = RANK + I * 0.5D0
        DOUT(I, 2) = RANK - I * 0.25D0
   20 CONTINUE
      CALL MPI_IRECV(DIN(1, 1), 5, MPI_DOUBLE_PRECISION, PREV, 21,
     &               MPI_COMM_WORLD, REQS(1), IERR)
      CALL MPI_IRECV(DIN(1, 2), 5, MPI_DOUBLE_PRECISION, NEXT, 22,
     &               MPI_COMM_WORLD, REQS(2), IERR)
      CALL MPI_ISEND(DOUT(1, 1), 5, MPI_DOUBLE_PRECISION, NEXT, 21,
     &               MPI_COMM_WORLD, REQS(3), IERR)
      CALL MPI_ISEND(DOUT(1, 2), 5, MPI_DOUBLE_PRECISION, PREV, 22,
     &               MPI_COMM_WORLD, REQS(4), IERR)
      CALL MPI_WAITALL(4, REQS, STATS, IERR)
      DO 21 I = 1, 5
        LOCAL = LOCAL + DIN(I, 1) + DIN(I, 2)
   21 CONTINUE
      IF (STATS(MPI_SOURCE, 1) .NE. PREV .OR.
     &    STATS(MPI_TAG, 2) .NE. 22) THEN
        PRINT *, 'bad statuses on rank', RANK
      END IF

C     Round 2: integers, statuses ignored.
      DO 30 I = 1, 6
        IOUT(I, 1) = RANK * 7 + I
        IOUT(I, 2) = RANK * 11 - I
   30 CONTINUE
      CALL MPI_IRECV(IIN(1, 1), 6, MPI_INTEGER, PREV, 31,
     &               MPI_COMM_WORLD, REQS(1), IERR)
      CALL MPI_IRECV(IIN(1, 2), 6, MPI_INTEGER, NEXT, 32,
     &               MPI_COMM_WORLD, REQS(2), IERR)
      CALL MPI_ISEND(IOUT(1, 1), 6, MPI_INTEGER, NEXT, 31,
     &               MPI_COMM_WORLD, REQS(3), IERR)
      CALL MPI_ISEND(IOUT(1, 2), 6, MPI_INTEGER, PREV, 32,
     &               MPI_COMM_WORLD, REQS(4), IERR)
      CALL MPI_WAITALL(4, REQS, MPI_STATUSES_IGNORE, IERR)
      DO 31 I = 1, 6
        LOCAL = LOCAL + IIN(I, 1) + IIN(I, 2)
   31 CONTINUE

C     Wildcard receive completed by MPI_WAIT with MPI_STATUS_IGNORE.
      IF (RANK .EQ. 0) THEN
        CALL MPI_IRECV(WILD, 3, MPI_INTEGER, MPI_ANY_SOURCE, 41,
     &                 MPI_COMM_WORLD, WREQ, IERR)
        CALL MPI_WAIT(WREQ, MPI_STATUS_IGNORE, IERR)
        LOCAL = LOCAL + WILD(1) + WILD(2) + WILD(3)
      ELSE IF (RANK .EQ. NPROCS - 1) THEN
        WILD(1) = 5
        WILD(2) = 6
        WILD(3) = 7
        CALL MPI_SEND(WILD, 3, MPI_INTEGER, 0, 41, MPI_COMM_WORLD,
     &                IERR)
      END IF

C     Collectives.
      DO 40 I = 1, 7
        BVAL(I) = 0
        IF (RANK .EQ. 1) BVAL(I) = I * I
   40 CONTINUE
      CALL MPI_BCAST(BVAL, 7, MPI_INTEGER, 1, MPI_COMM_WORLD, IERR)
      DO 41 I = 1, 7
        LOCAL = LOCAL + BVAL(I)
   41 CONTINUE

C     Split communicator.
      CALL MPI_COMM_SPLIT(MPI_COMM_WORLD, MOD(RANK, 2), RANK, SUBCOM,
     &                    IERR)
      CALL MPI_COMM_RANK(SUBCOM, SUBRNK, IERR)
      CALL MPI_COMM_SIZE(SUBCOM, SUBSIZ, IERR)
      IF (SUBSIZ .GE. 2) THEN
        IF (SUBRNK .EQ. 0) THEN
          DO 50 I = 1, 4
            SUB(I) = RANK * 1.5D0 + I
   50     CONTINUE
          CALL MPI_SEND(SUB, 4, MPI_DOUBLE_PRECISION, 1, 51, SUBCOM,
     &                  IERR)
        ELSE IF (SUBRNK .EQ. 1) THEN
          CALL MPI_RECV(SUB, 4, MPI_DOUBLE_PRECISION, 0, 51, SUBCOM,
     &                  STATUS, IERR)
          DO 51 I = 1, 4
            LOCAL = LOCAL + SUB(I)
   51     CONTINUE
        END IF
      END IF

      DSUM(1) = RANK + 1
      DSUM(2) = LOCAL
      DSUM(3) = SUBRNK
      CALL MPI_ALLREDUCE(DSUM, DRES, 3, MPI_DOUBLE_PRECISION, MPI_SUM,
     &                   MPI_COMM_WORLD, IERR)
      CALL MPI_BARRIER(MPI_COMM_WORLD, IERR)
      IF (RANK .EQ. 0) THEN
        WRITE (*, 100) NPROCS, DRES(1), DRES(2), DRES(3)
  100   FORMAT ('ranks ', I0, ' checksum ', F0.3, ' ', F0.3, ' ', F0.3)
      END IF
      CALL MPI_FINALIZE(IERR)
      END
