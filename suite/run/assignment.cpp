#include "dpstudy/assignment.hpp"

#include <algorithm>
#include <cmath>
#include <iterator>
#include <map>
#include <numeric>
#include <string>

#include "dpstudy/error.hpp"
#include "dpstudy/rng.hpp"

namespace dpstudy {
namespace {

// Random streams of the data seed, one per purpose, so that changing one
// option does not reshuffle what another one decides.
enum Stream : std::uint64_t { kOrder = 1, kUnits = 2, kPool = 3, kSpread = 1000, kDirichlet = 1u << 20 };

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

// Coarse pool mode: the pool is a uniformly random sample of `shared` samples
// (stream kPool), whatever the order; what is left keeps its order and is cut
// into one contiguous run per owner. Taking the first alpha of the order
// instead would give every worker the first classes of a label-sorted set.
// Each shard lists its positions in the order's sequence, so that one owner's
// shard is the whole order at any alpha.
std::vector<std::vector<std::int64_t>> coarse_with_pool(std::int64_t n, const std::vector<std::int64_t>& order,
                                                        std::int64_t shared, const AssignmentSpec& s) {
  std::vector<std::int64_t> index(static_cast<std::size_t>(n));
  std::iota(index.begin(), index.end(), 0);
  Rng rng = Rng::stream(s.seed, kPool);
  for (std::int64_t i = 0; i < shared; ++i) {  // partial Fisher-Yates: a draw without replacement
    std::swap(index[std::size_t(i)], index[std::size_t(i) + rng.below(std::uint64_t(n - i))]);
  }
  std::vector<std::int64_t> pool(index.begin(), index.begin() + shared);  // indices into the order, sorted
  std::sort(pool.begin(), pool.end());
  std::vector<std::int64_t> rest;  // the others, in the order's sequence
  rest.reserve(std::size_t(n - shared));
  for (std::int64_t i = 0, next = 0; i < n; ++i) {
    if (next < shared && pool[std::size_t(next)] == i) {
      ++next;
    } else {
      rest.push_back(i);
    }
  }
  const std::int64_t owners = s.owners, left = std::int64_t(rest.size());
  std::vector<Unit> parts;  // runs of `rest`
  for (std::int64_t u = 0; u < owners; ++u) {
    const std::int64_t b = part_begin(u, left, owners), e = part_begin(u + 1, left, owners);
    parts.push_back({b, e - b});
  }
  Rng::stream(s.seed, kUnits).shuffle(parts);  // which owner gets which run
  std::vector<std::vector<std::int64_t>> shards(static_cast<std::size_t>(owners));
  for (std::int64_t u = 0; u < owners; ++u) {
    const Unit& part = parts[std::size_t(u)];  // may be empty at alpha near 1: the pool feeds it
    // The pool and the part, both sorted indices into the order, merged into its sequence.
    auto& shard = shards[std::size_t(u)];
    shard.reserve(std::size_t(shared + part.size));
    std::vector<std::int64_t> merged;
    merged.reserve(shard.capacity());
    std::merge(pool.begin(), pool.end(), rest.begin() + part.start, rest.begin() + part.start + part.size,
               std::back_inserter(merged));
    for (const std::int64_t i : merged) shard.push_back(order[std::size_t(i)]);
  }
  return shards;
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
  // contiguous run per owner's disjoint part of what the pool leaves.
  std::vector<Unit> units;
  std::int64_t shared_units = 0;
  const bool pool = s.mode == OverlapMode::pool;
  if (s.granularity == Granularity::coarse) {
    const std::int64_t shared = pool ? std::llround(s.overlap * double(n)) : 0;
    if (shared > 0 && owners > 1) return coarse_with_pool(n, order, shared, s);
    std::vector<Unit> parts;
    for (std::int64_t u = 0; u < owners; ++u) {
      const std::int64_t b = part_begin(u, n, owners), e = part_begin(u + 1, n, owners);
      parts.push_back({b, e - b});
    }
    Rng::stream(s.seed, kUnits).shuffle(parts);  // which owner gets which run
    units = std::move(parts);
  } else {
    // Fine and medium units are in an order drawn with the data seed, so the
    // first alpha of them is already a uniformly random pool.
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

namespace {

void add_class_skew(std::int64_t n, const std::vector<std::vector<std::int64_t>>& shards, const std::int64_t* labels,
                    AssignmentStats& st) {
  std::int64_t classes = 0;
  for (std::int64_t i = 0; i < n; ++i) classes = std::max(classes, labels[i] + 1);
  std::vector<double> global(std::size_t(classes), 0.0);
  for (std::int64_t i = 0; i < n; ++i) global[std::size_t(labels[i])] += 1.0 / double(n);
  st.classes = classes;
  st.class_counts.assign(shards.size() * std::size_t(classes), 0);
  double tv_sum = 0;
  for (std::size_t u = 0; u < shards.size(); ++u) {
    std::int64_t* row = st.class_counts.data() + u * std::size_t(classes);
    for (std::int64_t p : shards[u]) ++row[labels[p]];
    double tv = 0;
    for (std::int64_t c = 0; c < classes; ++c) {
      const double share = shards[u].empty() ? 0.0 : double(row[c]) / double(shards[u].size());
      tv += std::abs(share - global[std::size_t(c)]);
    }
    tv_sum += tv / 2;
  }
  st.class_skew = shards.empty() ? 0 : tv_sum / double(shards.size());
}

}  // namespace

AssignmentStats assignment_stats(std::int64_t n, const std::vector<std::vector<std::int64_t>>& shards,
                                 const std::int64_t* labels) {
  AssignmentStats st;
  if (labels && n > 0) add_class_skew(n, shards, labels, st);
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
