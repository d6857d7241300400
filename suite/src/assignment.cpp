#include "dpstudy/assignment.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <numeric>
#include <string>

#include "dpstudy/error.hpp"
#include "dpstudy/rng.hpp"

namespace dpstudy {
namespace {

// Random streams of the data seed, one per purpose, so that changing one
// option does not reshuffle what another one decides.
enum Stream : std::uint64_t { kOrder = 1, kUnits = 2, kSpread = 1000, kDirichlet = 1u << 20 };

struct Unit {
  std::int64_t start, size;  // a run of positions in the ordered list
};

std::vector<std::int64_t> ordered_positions(std::int64_t n, const std::int64_t* labels, const AssignmentSpec& s) {
  std::vector<std::int64_t> order(static_cast<std::size_t>(n));
  std::iota(order.begin(), order.end(), 0);
  if (s.order == DataOrder::shuffled) {
    Rng::stream(s.seed, kOrder).shuffle(order);
  } else if (s.order == DataOrder::label) {
    if (!labels) throw Error("assign_shards: order=label needs the labels");
    std::stable_sort(order.begin(), order.end(), [labels](auto a, auto b) { return labels[a] < labels[b]; });
  }
  return order;
}

// Label skew (Hsu, Qi and Brown 2019): units [first, end) (single samples, in
// their dealt order) by owner, each class's samples split among the owners in
// proportions p ~ Dirichlet(alpha, ..., alpha) drawn per class, counts by largest
// remainder of p n_c, in unit order. A draw that leaves an owner without
// samples is drawn again (the next stream), as NIID-Bench does; returns the
// owner of every unit from `first` on.
std::vector<std::int64_t> dirichlet_owners(const std::vector<Unit>& units, std::size_t first,
                                           const std::vector<std::int64_t>& order, const std::int64_t* labels,
                                           const AssignmentSpec& s) {
  if (!labels) throw Error("assign_shards: dirichlet_alpha needs the labels");
  std::map<std::int64_t, std::vector<std::size_t>> by_class;  // unit indices, in unit order
  for (std::size_t i = first; i < units.size(); ++i) {
    by_class[labels[order[std::size_t(units[i].start)]]].push_back(i);
  }
  const auto owners = std::size_t(s.owners);
  constexpr int kDraws = 1000;
  for (int draw = 0; draw < kDraws; ++draw) {
    Rng rng = Rng::stream(s.seed, kDirichlet + std::uint64_t(draw));
    std::vector<std::int64_t> owner(units.size() - first, -1), size(owners, 0);
    for (const auto& [label, members] : by_class) {
      std::vector<double> p(owners);
      double sum = 0;
      for (double& x : p) sum += (x = rng.gamma(s.dirichlet_alpha));
      std::vector<std::int64_t> count(owners, 0);
      const auto n = std::int64_t(members.size());
      if (!(sum > 0) || !std::isfinite(sum)) {
        count[rng.below(owners)] = n;  // every share underflowed: alpha -> 0, one owner takes the class
      } else {
        std::int64_t dealt = 0;
        std::vector<std::pair<double, std::size_t>> remainder;
        for (std::size_t u = 0; u < owners; ++u) {
          const double exact = double(n) * p[u] / sum;
          count[u] = std::int64_t(std::floor(exact));
          dealt += count[u];
          remainder.emplace_back(exact - std::floor(exact), u);
        }
        std::stable_sort(remainder.begin(), remainder.end(),
                         [](const auto& a, const auto& b) { return a.first > b.first; });
        for (std::int64_t r = 0; r < n - dealt; ++r) ++count[remainder[std::size_t(r)].second];
      }
      std::size_t next = 0;
      for (std::size_t u = 0; u < owners; ++u) {
        for (std::int64_t k = 0; k < count[u]; ++k) owner[members[next++] - first] = std::int64_t(u);
        size[u] += count[u];
      }
    }
    if (std::all_of(size.begin(), size.end(), [](std::int64_t z) { return z > 0; })) return owner;
  }
  throw ConfigError("dirichlet_alpha", to_text(s.dirichlet_alpha),
                    "left a shard owner without samples in each of " + std::to_string(kDraws) + " draws (" +
                        std::to_string(owners) + " owners, " + std::to_string(units.size() - first) +
                        " samples to deal): give a larger alpha or fewer owners");
}

// [floor(i * total / parts), floor((i + 1) * total / parts)): near-equal contiguous parts.
std::int64_t part_begin(std::int64_t i, std::int64_t total, std::int64_t parts) { return i * total / parts; }

void append_unit(std::vector<std::int64_t>& shard, const std::vector<std::int64_t>& order, const Unit& u) {
  shard.insert(shard.end(), order.begin() + u.start, order.begin() + u.start + u.size);
}

}  // namespace

AssignmentSpec assignment_spec(const RunConfig& c) {
  return {c.shard_owners(), c.overlap,    c.overlap_mode,         c.granularity,
          c.block_size,     c.order,      c.resolved_data_seed(), c.dirichlet_alpha};
}

std::vector<std::vector<std::int64_t>> assign_shards(std::int64_t n, const std::int64_t* labels,
                                                     const AssignmentSpec& s) {
  const std::int64_t owners = s.owners;
  const std::vector<std::int64_t> order = ordered_positions(n, labels, s);

  // Units: single samples (fine), blocks (medium), or, for coarse, one
  // contiguous run per owner's disjoint part (and one for the shared pool).
  std::vector<Unit> units;
  std::int64_t shared_units = 0;
  const bool pool = s.mode == OverlapMode::pool;
  if (s.granularity == Granularity::coarse) {
    const std::int64_t shared = pool ? std::llround(s.overlap * double(n)) : 0;
    units.reserve(std::size_t(owners) + 1);
    if (shared > 0) units.push_back({0, shared});
    shared_units = shared > 0 ? 1 : 0;
    std::vector<Unit> parts;
    for (std::int64_t u = 0; u < owners; ++u) {
      const std::int64_t b = shared + part_begin(u, n - shared, owners);
      const std::int64_t e = shared + part_begin(u + 1, n - shared, owners);
      parts.push_back({b, e - b});
    }
    Rng::stream(s.seed, kUnits).shuffle(parts);  // which owner gets which run
    units.insert(units.end(), parts.begin(), parts.end());
  } else {
    const std::int64_t size = s.granularity == Granularity::fine ? 1 : s.block_size;
    for (std::int64_t b = 0; b < n; b += size) units.push_back({b, std::min(size, n - b)});
    Rng::stream(s.seed, kUnits).shuffle(units);
    shared_units = pool ? std::llround(s.overlap * double(units.size())) : 0;
  }

  // Disjoint parts: the non-shared units, dealt in near-equal contiguous groups
  // (or, with label skew, regrouped by the owner each was dealt to).
  const std::int64_t rest = std::int64_t(units.size()) - shared_units;
  std::vector<std::vector<std::int64_t>> shards(static_cast<std::size_t>(owners));
  std::vector<std::int64_t> first_unit(owners + 1);
  for (std::int64_t u = 0; u <= owners; ++u) first_unit[u] = shared_units + part_begin(u, rest, owners);
  if (s.dirichlet_alpha > 0) {
    const std::vector<std::int64_t> owner = dirichlet_owners(units, std::size_t(shared_units), order, labels, s);
    std::vector<std::size_t> by_owner(owner.size());
    std::iota(by_owner.begin(), by_owner.end(), 0);
    std::stable_sort(by_owner.begin(), by_owner.end(), [&](auto a, auto b) { return owner[a] < owner[b]; });
    std::vector<Unit> regrouped(units.begin(), units.begin() + shared_units);
    for (std::size_t i : by_owner) regrouped.push_back(units[std::size_t(shared_units) + i]);
    units = std::move(regrouped);
    std::vector<std::int64_t> dealt(owners, 0);
    for (std::int64_t o : owner) ++dealt[o];
    for (std::int64_t u = 0; u < owners; ++u) first_unit[u + 1] = first_unit[u] + dealt[u];
  }
  for (std::int64_t u = 0; u < owners; ++u) {
    auto& shard = shards[u];
    for (std::int64_t i = 0; i < shared_units; ++i) append_unit(shard, order, units[i]);
    for (std::int64_t i = first_unit[u]; i < first_unit[u + 1]; ++i) append_unit(shard, order, units[i]);
  }

  if (!pool && s.overlap > 0) {
    // Spread: each owner adds a seeded draw of alpha of everything it lacks,
    // in units (fine, medium) or as one contiguous run of each other part (coarse).
    for (std::int64_t u = 0; u < owners; ++u) {
      Rng rng = Rng::stream(s.seed, kSpread + std::uint64_t(u));
      auto& shard = shards[u];
      if (s.granularity == Granularity::coarse) {
        for (std::int64_t v = 0; v < owners; ++v) {
          if (v == u) continue;
          const Unit& part = units[v];
          const std::int64_t len = std::llround(s.overlap * double(part.size));
          const std::int64_t start = part.start + std::int64_t(rng.below(std::uint64_t(part.size - len + 1)));
          append_unit(shard, order, {start, len});
        }
      } else {
        std::vector<std::int64_t> others;
        for (std::int64_t i = 0; i < std::int64_t(units.size()); ++i) {
          if (i < first_unit[u] || i >= first_unit[u + 1]) others.push_back(i);
        }
        const auto take = std::size_t(std::llround(s.overlap * double(others.size())));
        for (std::size_t i = 0; i < take; ++i) {  // partial Fisher-Yates: a draw without replacement
          std::swap(others[i], others[i + rng.below(others.size() - i)]);
          append_unit(shard, order, units[others[i]]);
        }
      }
    }
  }
  for (std::int64_t u = 0; u < owners; ++u) {
    if (shards[u].empty()) {
      throw ConfigError(s.granularity == Granularity::medium ? "block_size" : "workers",
                        s.granularity == Granularity::medium ? std::to_string(s.block_size) : std::to_string(owners),
                        "leaves shard " + std::to_string(u) + " of " + std::to_string(owners) +
                            " empty: " + std::to_string(n) + " training samples in " +
                            std::to_string(units.size()) + " units cannot feed every shard owner");
    }
  }
  return shards;
}

AssignmentStats assignment_stats(std::int64_t n, const std::vector<std::vector<std::int64_t>>& shards) {
  AssignmentStats st;
  const std::size_t words = std::size_t(n + 63) / 64;
  std::vector<std::vector<std::uint64_t>> member(shards.size(), std::vector<std::uint64_t>(words, 0));
  std::vector<std::uint64_t> any(words, 0);
  st.min_size = shards.empty() ? 0 : std::int64_t(shards[0].size());
  for (std::size_t u = 0; u < shards.size(); ++u) {
    const auto size = std::int64_t(shards[u].size());
    st.min_size = std::min(st.min_size, size);
    st.max_size = std::max(st.max_size, size);
    st.mean_size += double(size) / double(shards.size());
    for (std::int64_t p : shards[u]) member[u][std::size_t(p) / 64] |= 1ull << (p % 64);
    for (std::size_t w = 0; w < words; ++w) any[w] |= member[u][w];
  }
  for (auto w : any) st.covered += __builtin_popcountll(w);
  double pairs = 0, total = 0;
  for (std::size_t u = 0; u < shards.size(); ++u) {
    for (std::size_t v = u + 1; v < shards.size(); ++v) {
      std::int64_t common = 0;
      for (std::size_t w = 0; w < words; ++w) common += __builtin_popcountll(member[u][w] & member[v][w]);
      total += double(common);
      pairs += 1;
    }
  }
  if (pairs > 0) {
    st.mean_intersection = total / pairs;
    st.mean_overlap_fraction = st.mean_intersection / double(n);
  }
  return st;
}

}  // namespace dpstudy
