/* Laplacian and hdiff written by hand in C, the way a careful programmer fuses them: one pass
   over memory, each plane's rows in order, the temporaries of hdiff (the Laplacian and the
   fluxes) kept in rolling buffers of a few rows that stay in L1, every level of K on one
   OpenMP thread. bench_tier_two.py compiles this file with the system's C compiler (`CC`, else
   `cc`) at -O3 -march=native -fopenmp -ffp-contract=off and times it beside tier one, tier two
   and the bandwidth floor, on the same gt:cpu_ifirst arrays (unit stride along I), as a
   witness of what C can reach on the machine. Each result is the stencil's, bit for bit: the
   operations and their order are those of the gtscript definitions in _gt4py_stencils.py.

   Every pointer points at the domain's origin; `sj` and `sk` are the strides of J and K in
   elements; the halo of two points around the domain along I and J is read, never written. */
#include <omp.h>
#include <stdlib.h>

static double lap_at(const double *s, long i, long sj) {
    return 4.0 * s[i] - (s[i - 1] + s[i + 1] + s[i - sj] + s[i + sj]);
}

static double limited(double f, double d) { return f * d > 0.0 ? 0.0 : f; }

/* out = -4 in plus the four neighbours, over ni x nj x nk (the `laplacian` kernel's sign and
   order; hdiff's Laplacian above is the other sign). */
void hand_laplacian(const double *restrict in, double *restrict out, long sj, long sk, int ni, int nj, int nk) {
#pragma omp parallel for schedule(static)
    for (int k = 0; k < nk; k++) {
        for (int j = 0; j < nj; j++) {
            const double *restrict s = in + j * sj + k * sk;
            double *restrict o = out + j * sj + k * sk;
#pragma omp simd
            for (int i = 0; i < ni; i++) o[i] = -4.0 * s[i] + s[i - 1] + s[i + 1] + s[i - sj] + s[i + sj];
        }
    }
}

/* hdiff: per output row j, the Laplacian of row j + 1 (rows j - 1 and j are kept from the two
   rows before), the J flux between rows j and j + 1 (the one between j - 1 and j kept from the
   row before), the I fluxes on both sides of each point and the output, in one loop. Returns
   -1, having written nothing, where the row buffers could not be allocated, else 0. */
int hand_hdiff(const double *restrict in, const double *restrict coeff, double *restrict out, long sj, long sk, int ni, int nj, int nk) {
    long w = ni + 2; /* a Laplacian row spans i = -1 .. ni */
    double *all = malloc((size_t)omp_get_max_threads() * 5 * (size_t)w * sizeof(double));
    if (all == NULL) return -1;
#pragma omp parallel
    {
        double *buf = all + (size_t)omp_get_thread_num() * 5 * (size_t)w;
#pragma omp for schedule(static)
        for (int k = 0; k < nk; k++) {
            double *lap[3] = {buf + 1, buf + w + 1, buf + 2 * w + 1}; /* rows j - 1, j, j + 1 */
            double *fly[2] = {buf + 3 * w, buf + 4 * w};              /* J flux below and above row j */
            const double *plane = in + k * sk;
            for (int r = 0; r < 2; r++) {
                const double *s = plane + (r - 1) * sj;
                for (long i = -1; i <= ni; i++) lap[r][i] = lap_at(s, i, sj);
            }
            for (int i = 0; i < ni; i++) fly[0][i] = limited(lap[1][i] - lap[0][i], plane[i] - plane[i - sj]);
            for (int j = 0; j < nj; j++) {
                const double *restrict s = plane + j * sj, *restrict s1 = s + sj;
                const double *restrict c = coeff + j * sj + k * sk;
                double *restrict o = out + j * sj + k * sk;
                const double *restrict l0 = lap[1];
                double *restrict l1 = lap[2];
                const double *restrict below = fly[0];
                double *restrict above = fly[1];
                l1[-1] = lap_at(s1, -1, sj);
                l1[ni] = lap_at(s1, ni, sj);
#pragma omp simd
                for (int i = 0; i < ni; i++) {
                    double lp = lap_at(s1, i, sj);
                    l1[i] = lp;
                    double fy = limited(lp - l0[i], s1[i] - s[i]);
                    above[i] = fy;
                    double fx = limited(l0[i + 1] - l0[i], s[i + 1] - s[i]);
                    double fx_west = limited(l0[i] - l0[i - 1], s[i] - s[i - 1]);
                    o[i] = s[i] - c[i] * (fx - fx_west + fy - below[i]);
                }
                double *oldest = lap[0];
                lap[0] = lap[1], lap[1] = lap[2], lap[2] = oldest;
                double *t = fly[0];
                fly[0] = fly[1], fly[1] = t;
            }
        }
    }
    free(all);
    return 0;
}
