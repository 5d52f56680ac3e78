// Oracle for the golden route files: prints what SimGrid computes for a platform.
//   g++ -O1 -std=c++17 route_oracle.cpp -o route_oracle -lsimgrid
//   ./route_oracle P.xml count        hosts (name speed cores) and links (name bw lat policy)
//   ./route_oracle P.xml all          the route (latency, links) of every host pair
//   ./route_oracle P.xml PAIRS.txt    the routes of the pairs listed, one "src dst" a line
// gen_golden.py uses it to write the .routes files that simgrid_tests.rs checks.
#include <simgrid/s4u.hpp>
#include <cstdio>
#include <string>
#include <vector>
#include <algorithm>
namespace sg4 = simgrid::s4u;
int main(int argc, char** argv) {
  sg4::Engine e(&argc, argv);
  if (argc < 2) { fprintf(stderr, "usage: dump platform.xml [all|count|pairs-file]\n"); return 1; }
  e.load_platform(argv[1]);
  e.seal_platform();
  std::string mode = argc > 2 ? argv[2] : "count";
  auto hosts = e.get_all_hosts();
  std::sort(hosts.begin(), hosts.end(), [](auto a, auto b){ return a->get_name() < b->get_name(); });
  printf("hosts %zu\n", hosts.size());
  if (mode == "count") {
    for (auto h : hosts) printf("host %s %.17g %d\n", h->get_cname(), h->get_speed(), h->get_core_count());
    for (auto l : e.get_all_links()) printf("link %s %.17g %.17g %d\n", l->get_cname(), l->get_bandwidth(), l->get_latency(), (int)l->get_sharing_policy());
    return 0;
  }
  auto one = [&](sg4::Host* a, sg4::Host* b) {
    std::vector<sg4::Link*> links; double lat = 0;
    try { a->route_to(b, links, &lat); } catch (std::exception& ex) { printf("route %s %s ERR\n", a->get_cname(), b->get_cname()); return; }
    printf("route %s %s %.17g", a->get_cname(), b->get_cname(), lat);
    for (auto l : links) printf(" %s", l->get_cname());
    printf("\n");
  };
  if (mode == "all") {
    for (auto a : hosts) for (auto b : hosts) one(a, b);
  } else {
    FILE* f = fopen(mode.c_str(), "r"); char s[512], d[512];
    while (f && fscanf(f, "%511s %511s", s, d) == 2) one(sg4::Host::by_name(s), sg4::Host::by_name(d));
  }
  return 0;
}
