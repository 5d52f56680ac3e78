#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
/* How a strided message (HPL's panel: a vector of 2,000-double columns, leading dimension
   4,000, received contiguous) moves between two ranks that each share their core with a
   rank computing outside MPI: 4 ranks bound 2 per core (scripts/probe-oversubscribed-transfer.sh).
   With BUSY = 0 the other two ranks wait in a barrier instead. Rank 0 prints, per size, the
   median, min and max of 7 transfers (until a zero-byte answer). The computing ranks stop
   after 150 ms, which caps the times. */
int main(int argc,char**argv){
  MPI_Init(&argc,&argv); int r; MPI_Comm_rank(MPI_COMM_WORLD,&r);
  int busy = atoi(argv[1]);
  int sizes[] = {32, 64, 128, 256, 512};  /* columns of 2000 doubles: 0.5 .. 8 MB */
  int m = 2000, lda = 4000;
  double *a = malloc((size_t)lda*512*8), *b = malloc((size_t)m*512*8);
  for (size_t i=0;i<(size_t)lda*512;i++) a[i]=1.0; for (size_t i=0;i<(size_t)m*512;i++) b[i]=2.0;
  for (int s = 0; s < 5; s++) {
    int cols = sizes[s]; MPI_Datatype vec; MPI_Type_vector(cols, m, lda, MPI_DOUBLE, &vec); MPI_Type_commit(&vec);
    double tsum[7]; int reps = 7;
    for (int k = 0; k < reps; k++) {
      MPI_Barrier(MPI_COMM_WORLD);
      double t0 = MPI_Wtime();
      if (r >= 2) { if (busy) { volatile double x = 1; while (MPI_Wtime() - t0 < 0.15) for (int i=0;i<10000;i++) x = x*1.0000001+1e-9; } }
      else {
        while (MPI_Wtime() - t0 < 0.005) ; /* let the busy ranks start */
        double t1 = MPI_Wtime();
        if (r == 0) { MPI_Send(a,1,vec,1,0,MPI_COMM_WORLD); MPI_Recv(NULL,0,MPI_DOUBLE,1,0,MPI_COMM_WORLD,MPI_STATUS_IGNORE); }
        else { MPI_Recv(b,m*cols,MPI_DOUBLE,0,0,MPI_COMM_WORLD,MPI_STATUS_IGNORE); MPI_Send(NULL,0,MPI_DOUBLE,0,0,MPI_COMM_WORLD); }
        tsum[k] = MPI_Wtime() - t1;
      }
    }
    if (r == 0) { for (int i=0;i<reps;i++) for (int j=i+1;j<reps;j++) if (tsum[j]<tsum[i]) {double t=tsum[i];tsum[i]=tsum[j];tsum[j]=t;}
      printf("busy=%d %7d bytes: median %.2f ms (min %.2f max %.2f)\n", busy, m*cols*8, tsum[reps/2]*1e3, tsum[0]*1e3, tsum[reps-1]*1e3); }
    MPI_Type_free(&vec);
  }
  MPI_Finalize(); }
