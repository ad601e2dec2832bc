// Diffusion stencil on a grid stored as vector<vector<double>>; each step builds a
// fresh next grid (resized row by row) and swaps it in; the old grid is destroyed
// (new-user trial 10: 12 KB rows, no large block; glibc trims the heap each step).
#include <cstdio>
#include <vector>
#include <cstdlib>

using Grid = std::vector<std::vector<double>>;

static Grid step(const Grid &g) {
    size_t n = g.size(), m = g[0].size();
    Grid next;
    next.resize(n);
    for (size_t i = 0; i < n; i++) {
        next[i].resize(m);
        for (size_t j = 0; j < m; j++) {
            double up = g[i ? i - 1 : i][j], dn = g[i + 1 < n ? i + 1 : i][j];
            double lf = g[i][j ? j - 1 : j], rt = g[i][j + 1 < m ? j + 1 : j];
            next[i][j] = 0.2 * (g[i][j] + up + dn + lf + rt);
        }
    }
    return next;
}

int main(int argc, char **argv) {
    int steps = argc > 1 ? atoi(argv[1]) : 300;
    size_t n = 1500, m = 1500;
    Grid g(n, std::vector<double>(m, 0.0));
    g[n / 2][m / 2] = 1e6;
    for (int s = 0; s < steps; s++) g = step(g);
    printf("center %.6f\n", g[n / 2][m / 2]);
    return 0;
}
