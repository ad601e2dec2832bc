// (new-user trial 36: on jemalloc a purge-churn that --verify refutes and
// memory kept beside it, which held its 'sooner' fix back for that churn)
// Heat diffusion on a ragged grid stored as vector<vector<double>>: every
// step builds a brand-new grid (rows of 1200 doubles) and swaps it in.
#include <cstdio>
#include <vector>
#include <cstdlib>

using Grid = std::vector<std::vector<double>>;

static Grid step(const Grid &g) {
    size_t R = g.size();
    Grid n(R);
    for (size_t i = 0; i < R; i++) {
        size_t C = g[i].size();
        n[i] = std::vector<double>(C);
        for (size_t j = 0; j < C; j++) {
            double up = i ? g[i-1][j < g[i-1].size() ? j : 0] : 0;
            double dn = i + 1 < R ? g[i+1][j < g[i+1].size() ? j : 0] : 0;
            double l = j ? g[i][j-1] : 0, r = j + 1 < C ? g[i][j+1] : 0;
            n[i][j] = 0.2 * (g[i][j] + up + dn + l + r);
        }
    }
    return n;
}

int main(int argc, char **argv) {
    int steps = argc > 1 ? atoi(argv[1]) : 100;
    Grid g(1500);
    for (size_t i = 0; i < g.size(); i++) { g[i].assign(1100 + i % 200, 0.0); g[i][i % g[i].size()] = 100; }
    for (int t = 0; t < steps; t++) g = step(g);
    double s = 0; for (auto &r : g) for (double v : r) s += v;
    printf("sum=%.6f\n", s);
}
