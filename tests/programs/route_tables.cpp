// `route_tables [QUERIES]`: shortest paths on a 250 x 250 grid, each
// query with unordered_maps of its own for the distances and parents,
// made empty and grown as the search reaches more nodes: their buckets
// are rehashed into larger arrays (up to some 1 MiB) and the maps freed
// at the end of the query (new-user trial 45's route planner).
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <queue>
#include <unordered_map>
#include <utility>
#include <vector>

static const int side = 250;

static int weight(int a, int b)
{
	return 1 + (unsigned)(a * 2654435761u ^ b * 40503u) % 9;
}

static long route(int from, int to)
{
	std::unordered_map<int, int> dist, parent;
	typedef std::pair<int, int> item;
	std::priority_queue<item, std::vector<item>, std::greater<item> > open;
	dist[from] = 0;
	open.push(item(0, from));
	while (!open.empty()) {
		item top = open.top();
		open.pop();
		int u = top.second;
		if (top.first > dist[u])
			continue;
		if (u == to)
			break;
		int x = u % side, y = u / side;
		int next[4] = {x > 0 ? u - 1 : -1, x < side - 1 ? u + 1 : -1,
			       y > 0 ? u - side : -1, y < side - 1 ? u + side : -1};
		for (int v : next) {
			if (v < 0)
				continue;
			int d = top.first + weight(u, v);
			auto it = dist.find(v);
			if (it == dist.end() || d < it->second) {
				dist[v] = d;
				parent[v] = u;
				open.push(item(d, v));
			}
		}
	}
	long hops = 0;
	for (int v = to; v != from && parent.count(v); v = parent[v])
		hops++;
	return hops;
}

int main(int argc, char **argv)
{
	int queries = argc > 1 ? std::atoi(argv[1]) : 30;
	long total = 0;
	for (int q = 0; q < queries; q++)
		total += route((q * 7919) % (side * side), side * side - 1 - (q * 104729) % side);
	std::printf("hops %ld\n", total);
	return 0;
}
