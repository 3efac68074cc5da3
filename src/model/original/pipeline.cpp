// A line-by-line model of the original's PPGroup (src/stage.py): warm-up forwards, steady
// one-forward-one-backward, cool-down backwards, each send waiting for its receiver. Unset
// event times read as 0, and index -1 reads the last entry, as Python lists do.
#include "zerosearch/model/pipeline.hpp"

#include <algorithm>
#include <cstring>
#include <limits>
#include <memory>
#include <utility>

namespace zerosearch {

namespace {

/// Event times of one stage, one entry per micro-batch: views into one buffer that each
/// thread reuses, so that a simulation allocates nothing once the buffer is large enough.
struct StageEvents {
  struct Row {
    double* p;
    std::size_t n;
    std::size_t size() const noexcept { return n; }
    double& operator[](std::size_t i) const noexcept { return p[i]; }
  };
  /// `with_starts`: the buffer also holds the compute start rows (a timeline was asked for).
  StageEvents(double* base, std::size_t m, bool with_starts)
      : fce{base, m}, fse{base + m, m}, frs{base + 2 * m, m}, fre{base + 3 * m, m},
        bce{base + 4 * m, m}, bse{base + 5 * m, m}, brs{base + 6 * m, m}, bre{base + 7 * m, m},
        fcs{with_starts ? base + 8 * m : nullptr, m}, bcs{with_starts ? base + 9 * m : nullptr, m} {}
  static constexpr std::size_t rows(bool with_starts) noexcept { return with_starts ? 10 : 8; }
  Row fce; // forward compute end
  Row fse; // forward send end
  Row frs; // forward receive start
  Row fre; // forward receive end
  Row bce; // backward compute end
  Row bse; // backward send end
  Row brs; // backward receive start
  Row bre; // backward receive end
  Row fcs; // forward compute start (recorded for the timeline only)
  Row bcs; // backward compute start (likewise)
};

/// Python list indexing: -1 is the last element.
double& at(const StageEvents::Row& v, int i) {
  return v[static_cast<std::size_t>(i < 0 ? i + static_cast<int>(v.size()) : i)];
}

/// Step 1: each stage's forward and backward pass (its compute split by the forward share)
/// and its warm-up forwards, min(pp - 1 - i, m).
void fill_stage_passes(int m, int pp, const double* comp_s, ForwardShare share, double* fwd,
                       double* bwd, int* warm, int from = 0) noexcept {
  const double fwbw = share == ForwardShare::quarter ? 3.0 : 2.0;
  const double parts = share == ForwardShare::quarter ? 4.0 : 3.0;
  for (int i = from; i < pp; ++i) {
    const auto u = static_cast<std::size_t>(i);
    fwd[u] = comp_s[u] / parts;
    bwd[u] = fwbw * comp_s[u] / parts;
    warm[u] = std::min(pp - i - 1, m);
  }
}

/// Step 2: the sums the early stop's lower bounds use (see Simulation::hopeless_*). Returns the
/// slowest backward pass. `from`: up and slow_up before it are in place (from the same
/// backward passes before from - 1). `down` may be null (not filled).
double fill_stop_bounds(int pp, const double* fwd, const double* bwd, double* up,
                        double* slow_up, double* down, std::size_t from = 0) noexcept {
  const auto ppu = static_cast<std::size_t>(pp);
  for (std::size_t u = from; u < ppu; ++u) {
    up[u] = u == 0 ? 0.0 : up[u - 1] + bwd[u - 1];
    slow_up[u] = u == 0 ? 0.0 : std::max(slow_up[u - 1], bwd[u - 1]);
  }
  // Every backward pass, summed from stage 0 on (up's order), and the slowest of them.
  const double all_bwd = up[ppu - 1] + bwd[ppu - 1];
  const double slowest_bwd = std::max(slow_up[ppu - 1], bwd[ppu - 1]);
  if (down == nullptr) {
    return slowest_bwd;
  }
  for (std::size_t u = ppu; u-- > 0;) {
    down[u] = u + 1 == ppu ? all_bwd : down[u + 1] + fwd[u + 1];
  }
  return slowest_bwd;
}

/// The storage of a simulation: the event rows of every stage, then the per-stage constants
/// (forward and backward pass, the early stop's sums), and the warm-up counts.
struct Workspace {
  std::vector<double> buffer;
  std::vector<StageEvents> st;
  std::vector<int> warm;

  /// Sizes the storage for m micro-batches on pp stages; `zero`: every event time reads 0.
  void layout(int m, int pp, bool with_starts, bool zero) {
    const auto mu = static_cast<std::size_t>(m);
    const auto ppu = static_cast<std::size_t>(pp);
    const std::size_t rows = StageEvents::rows(with_starts);
    if (zero) {
      buffer.assign(ppu * rows * mu + 5 * ppu, 0.0);
    } else {
      buffer.resize(ppu * rows * mu + 5 * ppu, 0.0);
    }
    st.clear();
    for (std::size_t i = 0; i < ppu; ++i) {
      st.emplace_back(buffer.data() + i * rows * mu, mu, with_starts);
    }
    warm.resize(ppu);
  }
  [[nodiscard]] double* constants(int m, int pp, bool with_starts) noexcept {
    return buffer.data() + static_cast<std::size_t>(pp) * StageEvents::rows(with_starts) *
                               static_cast<std::size_t>(m);
  }
};

/// The event times a simulation overwrites, with their earlier values, so that they can be put
/// back (OneFOneBSequence keeps its warm-up events between simulations).
/// Sized once for every write of the steady and cool-down phases (at most 4 per pass).
struct UndoLog {
  std::vector<std::pair<double*, double>> entries;
  std::size_t size = 0;
};

/// One simulation; `Record` (a timeline was asked for) also keeps every pass's start and hands
/// the event rows to `events`; `Logged` records in an UndoLog what the steady and cool-down
/// phases write. Templates, so that the search's simulations pay nothing for them.
/// The steps, in order: the stage constants (fill_stage_passes, fill_stop_bounds), warm_up(),
/// steady(), cool_down(), finish(). Each phase returns false once the simulation is known to
/// end at `stop_at` or later.
template <bool Record, bool Logged = false>
class Simulation {
public:
  /// On `ws`, laid out for m and pp; the stage constants are filled by the caller (fill()).
  Simulation(Workspace& ws, int m, int pp, const double* for_send_s, const double* back_send_s,
             double stop_at, UndoLog* log = nullptr)
      : m_(m), pp_(pp), for_send_s_(for_send_s), back_send_s_(back_send_s), stop_at_(stop_at),
        log_(log) {
    const auto ppu = static_cast<std::size_t>(pp);
    st_ = ws.st.data();
    fwd_ = ws.constants(m, pp, Record);
    bwd_ = fwd_ + ppu;
    // up[i]: the backward passes of stages 0..i-1; slow_up[i]: the longest of them (0 if
    // none); down[i]: the forward passes of stages i+1..pp-1 and the backward passes of every
    // stage.
    up_ = bwd_ + ppu;
    slow_up_ = up_ + ppu;
    down_ = slow_up_ + ppu;
    warm_ = ws.warm.data();
  }

  /// The stage constants of `comp_s`; those of the stages before `from` are in place (from the
  /// same compute).
  void fill(const double* comp_s, ForwardShare share, int from = 0) {
    fill_stage_passes(m_, pp_, comp_s, share, fwd_, bwd_, warm_, from);
    // Logged (OneFOneBSequence) has no forward checks, which use down only.
    slowest_bwd_ = fill_stop_bounds(pp_, fwd_, bwd_, up_, slow_up_, Logged ? nullptr : down_,
                                    static_cast<std::size_t>(from));
  }

  /// Warm-up: stage i runs its first warm[i] forwards.
  bool warm_up() {
    const int m = m_;
    const int pp = pp_;
    // warm[i] = min(pp - 1 - i, m) falls with i: the loops below start and end at the stages
    // that have a pass in step j (their checks stay, for the stages in between).
    for (int j = 0; j < m; ++j) {
      for (int i = 0; i < std::min(pp, pp - 1 - j); ++i) {
        if (j >= warm_[static_cast<std::size_t>(i)]) {
          continue;
        }
        if (!warm_up_event<true>(i, j)) {
          return false;
        }
      }
    }
    return true;
  }

  /// Stage i's warm-up forward j (j < warm[i]) and its send. With `Check`, returns false (and
  /// stops) once the simulation is known to end at `stop_at` or later.
  template <bool Check>
  bool warm_up_event(int i, int j) {
    const int pp = pp_;
    const int w = warm_[static_cast<std::size_t>(i)];
    auto& s = S(i);
    double start = 0.0;
    if (i == 0) {
      start = j == 0 ? 0.0 : at(s.fse, j - 1);
    } else if (j == 0 || i == pp - 1) {
      start = at(s.fre, j);
    } else {
      start = std::max(at(s.fse, j - 1), at(s.fre, j));
    }
    const double end = start + fwd_[static_cast<std::size_t>(i)];
    at(s.fce, j) = end;
    if constexpr (Record) {
      at(s.fcs, j) = start;
    }
    if constexpr (Check) {
      if (hopeless_forward(i, j, end)) {
        return false;
      }
    }
    if (i > 0 && j < w - 1) {
      at(s.frs, j + 1) = end;
    }
    if (i < pp - 1) {
      auto& next = S(i + 1);
      const double send_end =
          j == 0 ? end + send_for(i) : std::max(end, at(next.frs, j)) + send_for(i);
      at(s.fse, j) = send_end;
      at(next.fre, j) = send_end;
    }
    return true;
  }

  /// Steady state: per step j, one forward on every stage that has one left, then backward j
  /// from the last stage to the first.
  bool steady() {
    const int m = m_;
    const int pp = pp_;
    for (int j = 0; j < m; ++j) {
      // Stages before pp - m + j have no forward and no backward in step j.
      const int first = std::max(0, pp - m + j);
      for (int i = first; i < pp; ++i) {
        const int w = warm_[static_cast<std::size_t>(i)];
        const int fid = j + w;
        if (fid > m - 1) {
          continue;
        }
        auto& s = S(i);
        double start = 0.0;
        bool first_steady = fid == w;
        const int prev_id = first_steady ? fid - 1 : j - 1;
        if (first_steady) {
          const double prev_send_end = prev_id >= 0 ? at(s.fse, prev_id) : 0.0;
          start = std::max(prev_send_end, at(s.fre, fid));
        } else if (i == 0) {
          start = at(s.bce, prev_id);
        } else {
          start = std::max(at(s.bse, prev_id), at(s.fre, fid));
        }
        const double end = start + fwd_[static_cast<std::size_t>(i)];
        put(at(s.fce, fid), end);
        if constexpr (Record) {
          at(s.fcs, fid) = start;
        }
        // OneFOneBSequence (Logged) leaves out the forward checks: on the partitioner's leaves
        // the backward checks stop first, and a check left out only stops later.
        if constexpr (!Logged) {
          if (hopeless_forward(i, fid, end)) {
            return false;
          }
        }
        if (i < pp - 1) {
          auto& next = S(i + 1);
          put(at(s.brs, j), end);
          const double next_recv_start =
              (first_steady && prev_id < 0) ? 0.0 : at(next.frs, fid);
          const double send_end = std::max(end, next_recv_start) + send_for(i);
          put(at(s.fse, fid), send_end);
          put(at(next.fre, fid), send_end);
        }
      }
      const int bid = j;
      for (int i = pp - 1; i >= first; --i) {
        const int w = warm_[static_cast<std::size_t>(i)];
        if (bid > m - w - 1) {
          continue;
        }
        auto& s = S(i);
        const int fid = bid + w;
        const double prev_send_end = i > 0 ? at(s.fse, fid) : 0.0;
        const double start = std::max({prev_send_end, at(s.bre, bid), at(s.fce, fid)});
        const double end = start + bwd_[static_cast<std::size_t>(i)];
        put(at(s.bce, bid), end);
        if constexpr (Record) {
          at(s.bcs, bid) = start;
        }
        if (hopeless(i, bid, end)) {
          return false;
        }
        if (i > 0) {
          auto& prev = S(i - 1);
          if (fid + 1 < m) {
            put(at(s.frs, fid + 1), end);
          } else if (bid + 1 < m) {
            put(at(s.brs, bid + 1), end);
          }
          const double send_end = std::max(end, at(prev.brs, bid)) + send_back(i);
          put(at(s.bse, bid), send_end);
          put(at(prev.bre, bid), send_end);
        } else if (bid == m - 1 - w && bid + 1 < m) {
          put(at(s.brs, bid + 1), end);
        }
      }
    }
    return true;
  }

  /// Cool-down: stage i runs its last warm[i] backwards (stages after pp - 1 - m + j have none
  /// in step j).
  bool cool_down() {
    const int m = m_;
    const int pp = pp_;
    for (int j = 0; j < m; ++j) {
      for (int i = std::min(pp - 1, pp - 1 - m + j); i >= 0; --i) {
        const int w = warm_[static_cast<std::size_t>(i)];
        const int bid = j;
        if (bid < m - w) {
          continue;
        }
        auto& s = S(i);
        const double start = std::max({at(s.bce, bid - 1), at(s.bre, bid), at(s.bse, bid - 1)});
        const double end = start + bwd_[static_cast<std::size_t>(i)];
        put(at(s.bce, bid), end);
        if constexpr (Record) {
          at(s.bcs, bid) = start;
        }
        if (hopeless(i, bid, end)) {
          return false;
        }
        if (bid < m - 1) {
          put(at(s.brs, bid + 1), end);
        }
        if (i > 0) {
          auto& prev = S(i - 1);
          const double send_end = std::max(end, at(prev.brs, bid)) + send_back(i);
          put(at(s.bse, bid), send_end);
          put(at(prev.bre, bid), send_end);
        }
      }
    }
    return true;
  }

  /// Each stage's end (its last backward) into `ends`; with Record, every event into `events`.
  void finish(double* ends, OneFOneBEvents* events) const {
    for (int i = 0; i < pp_; ++i) {
      ends[static_cast<std::size_t>(i)] = at(S(i).bce, m_ - 1);
    }
    if constexpr (Record) {
      const auto mu = static_cast<std::size_t>(m_);
      const auto ppu = static_cast<std::size_t>(pp_);
      const auto copy = [&](std::vector<double>& to, StageEvents::Row StageEvents::*row) {
        to.resize(ppu * mu);
        for (std::size_t i = 0; i < ppu; ++i) {
          const StageEvents::Row& r = st_[i].*row;
          std::copy(r.p, r.p + r.n, to.begin() + static_cast<std::ptrdiff_t>(i * mu));
        }
      };
      copy(events->forward_start, &StageEvents::fcs);
      copy(events->forward_end, &StageEvents::fce);
      copy(events->forward_send_end, &StageEvents::fse);
      copy(events->backward_start, &StageEvents::bcs);
      copy(events->backward_end, &StageEvents::bce);
      copy(events->backward_send_end, &StageEvents::bse);
    } else {
      (void)events;
    }
  }

private:
  /// Writes an event time of the steady or cool-down phase (logged when Logged).
  void put(double& slot, double value) {
    if constexpr (Logged) {
      log_->entries[log_->size++] = {&slot, slot};
    }
    slot = value;
  }
  StageEvents& S(int i) const { return st_[static_cast<std::size_t>(i)]; }
  double send_for(int i) const { return for_send_s_[static_cast<std::size_t>(i)]; }
  double send_back(int i) const { return back_send_s_[static_cast<std::size_t>(i)]; }

  // Lower bounds on stage 0's last backward (which every stage's last backward precedes, each
  // stage running its passes of one kind in micro-batch order), to stop early:
  // - once stage i's backward `bid` ends at `end`: either stage i still runs its later backward
  //   passes, and the forward passes between them in its steady phase, one at a time, then
  //   micro-batch m-1 goes back through stages i-1..0; or micro-batch `bid` goes back to a
  //   stage k < i, which runs its later backward passes, and so on up to stage 0;
  bool hopeless(int i, int bid, double end) const {
    const auto u = static_cast<std::size_t>(i);
    const int forwards_left = std::max(m_ - 1 - warm_[u] - bid, 0);
    const auto later = static_cast<double>(m_ - 1 - bid);
    const double own = later * bwd_[u] + static_cast<double>(forwards_left) * fwd_[u];
    return end + std::max(own, later * slow_up_[u]) + up_[u] >= stop_at_;
  }
  // - once stage i's forward `fid` ends at `end`: either stage i still runs its later forward
  //   passes, then micro-batch m-1 goes to the last stage and back; or micro-batch `fid` goes
  //   to the last stage and back up to a stage k, which runs its later backward passes.
  bool hopeless_forward(int i, int fid, double end) const {
    const auto u = static_cast<std::size_t>(i);
    const auto later = static_cast<double>(m_ - 1 - fid);
    return end + std::max(later * fwd_[u], later * slowest_bwd_) + down_[u] >= stop_at_;
  }

  int m_;
  int pp_;
  const double* for_send_s_;
  const double* back_send_s_;
  double stop_at_;
  UndoLog* log_;
  StageEvents* st_ = nullptr;
  double* fwd_ = nullptr;
  double* bwd_ = nullptr;
  double* up_ = nullptr;
  double* slow_up_ = nullptr;
  double* down_ = nullptr;
  int* warm_ = nullptr;
  double slowest_bwd_ = 0.0;
};

template <bool Record>
bool simulate(int m, int pp, const double* comp_s, const double* for_send_s,
              const double* back_send_s, ForwardShare share, double stop_at, double* ends,
              OneFOneBEvents* events) {
  // One workspace per thread, reused: unset event times read as 0, as in the original's
  // zero-initialised lists.
  thread_local Workspace ws;
  ws.layout(m, pp, Record, true);
  Simulation<Record> sim(ws, m, pp, for_send_s, back_send_s, stop_at);
  sim.fill(comp_s, share);
  if (!sim.warm_up() || !sim.steady() || !sim.cool_down()) {
    return false;
  }
  sim.finish(ends, events);
  return true;
}

} // namespace

bool simulate_1f1b_into(int m, int pp, const double* comp_s, const double* for_send_s,
                        const double* back_send_s, ForwardShare share, double stop_at,
                        double* ends, OneFOneBEvents* events) {
  return events != nullptr
             ? simulate<true>(m, pp, comp_s, for_send_s, back_send_s, share, stop_at, ends, events)
             : simulate<false>(m, pp, comp_s, for_send_s, back_send_s, share, stop_at, ends,
                               nullptr);
}

/// The warm-up events in the order the sequence recomputes them, and the first of them that
/// depends on each stage's compute.
struct OneFOneBSequence::Impl {
  int m;
  int pp;
  ForwardShare share;
  std::vector<double> for_send_s;
  std::vector<double> back_send_s;
  Workspace ws;
  UndoLog log;
  /// The compute of the previous simulation's stages, and how many of them its warm-up events
  /// still hold (0: none).
  std::vector<double> comp_s;
  int valid = 0;
  /// Warm-up events (stage, micro-batch), by the last stage whose compute they depend on, then in
  /// the simulation's order; from_stage[d]: the first that depends on stage d or a later one.
  std::vector<std::pair<int, int>> events;
  std::vector<std::size_t> from_stage;

  Impl(int micro_batches, int stages, std::vector<double> for_send, std::vector<double> back_send,
       ForwardShare forward_share)
      : m(micro_batches), pp(stages), share(forward_share), for_send_s(std::move(for_send)),
        back_send_s(std::move(back_send)) {
    const auto mu = static_cast<std::size_t>(m);
    const auto ppu = static_cast<std::size_t>(pp);
    ws.layout(m, pp, false, true);
    // Each pass of the steady and cool-down phases writes at most 4 event times.
    log.entries.resize(8 * ppu * mu);
    comp_s.assign(ppu, 0.0);
    // Each warm-up event's rank: the last stage whose compute it depends on, through the event
    // times it reads (following Simulation::warm_up_event exactly), and at least that of every
    // event it reads from, so that ranks sort each event after those. -1: unset (a constant 0).
    std::vector<int> fce(ppu * mu, -1);
    std::vector<int> fse(ppu * mu, -1);
    std::vector<int> frs(ppu * mu, -1);
    std::vector<int> fre(ppu * mu, -1);
    const auto at = [mu](std::vector<int>& row, int i, int j) -> int& {
      return row[static_cast<std::size_t>(i) * mu + static_cast<std::size_t>(j)];
    };
    struct Ranked {
      int depends_on;
      int i;
      int j;
    };
    std::vector<Ranked> ranked;
    for (int j = 0; j < m; ++j) {
      for (int i = 0; i < pp; ++i) {
        const int w = std::min(pp - i - 1, m);
        if (j >= w) {
          continue;
        }
        int rank = i;
        if (i == 0) {
          rank = std::max(rank, j == 0 ? -1 : at(fse, 0, j - 1));
        } else if (j == 0 || i == pp - 1) {
          rank = std::max(rank, at(fre, i, j));
        } else {
          rank = std::max({rank, at(fse, i, j - 1), at(fre, i, j)});
        }
        if (i < pp - 1 && j > 0) {
          rank = std::max(rank, at(frs, i + 1, j));
        }
        at(fce, i, j) = rank;
        if (i > 0 && j < w - 1) {
          at(frs, i, j + 1) = rank;
        }
        if (i < pp - 1) {
          at(fse, i, j) = rank;
          at(fre, i + 1, j) = rank;
        }
        ranked.push_back(Ranked{rank, i, j});
      }
    }
    std::stable_sort(ranked.begin(), ranked.end(),
                     [](const Ranked& a, const Ranked& b) { return a.depends_on < b.depends_on; });
    from_stage.resize(ppu + 1);
    for (int d = 0; d <= pp; ++d) {
      from_stage[static_cast<std::size_t>(d)] = static_cast<std::size_t>(
          std::partition_point(ranked.begin(), ranked.end(),
                               [d](const Ranked& r) { return r.depends_on < d; }) -
          ranked.begin());
    }
    for (const Ranked& r : ranked) {
      events.emplace_back(r.i, r.j);
    }
  }
};

OneFOneBSequence::OneFOneBSequence(int micro_batches, int pp, std::vector<double> for_send_s,
                                   std::vector<double> back_send_s, ForwardShare share)
    : impl_(std::make_unique<Impl>(micro_batches, pp, std::move(for_send_s),
                                   std::move(back_send_s), share)) {}

OneFOneBSequence::~OneFOneBSequence() = default;
OneFOneBSequence::OneFOneBSequence(OneFOneBSequence&&) noexcept = default;
OneFOneBSequence& OneFOneBSequence::operator=(OneFOneBSequence&&) noexcept = default;

bool OneFOneBSequence::simulate(const double* comp_s, double stop_at, double* ends) {
  Impl& d = *impl_;
  // The first stage whose compute differs, bit for bit, from the previous simulation's.
  int changed = 0;
  while (changed < d.valid &&
         std::memcmp(&comp_s[changed], &d.comp_s[static_cast<std::size_t>(changed)],
                     sizeof(double)) == 0) {
    ++changed;
  }
  std::copy(comp_s + changed, comp_s + d.pp, d.comp_s.begin() + changed);
  Simulation<false, true> sim(d.ws, d.m, d.pp, d.for_send_s.data(), d.back_send_s.data(), stop_at,
                              &d.log);
  sim.fill(comp_s, d.share, std::min(changed, d.valid));
  // The warm-up events that depend on a changed stage, in an order that computes each after
  // every event it reads (those that depend on earlier stages only are as they were). Without
  // the early stop: it would leave later events unset; the steady phase's checks still stop.
  for (std::size_t k = d.from_stage[static_cast<std::size_t>(changed)]; k < d.events.size(); ++k) {
    sim.template warm_up_event<false>(d.events[k].first, d.events[k].second);
  }
  d.valid = d.pp;
  d.log.size = 0;
  const bool done = sim.steady() && sim.cool_down();
  if (done) {
    sim.finish(ends, nullptr);
  }
  // Put back what the steady and cool-down phases wrote: the next simulation reads them unset.
  for (std::size_t k = d.log.size; k-- > 0;) {
    *d.log.entries[k].first = d.log.entries[k].second;
  }
  return done;
}

OneFOneBGraph::OneFOneBGraph(int m, int pp, const double* for_send_s,
                             const double* back_send_s, ForwardShare share)
    : pp_(pp) {
  parts_ = share == ForwardShare::quarter ? 4.0 : 3.0;
  fwbw_ = parts_ - 1.0;
  fwd_share_ = 1.0 / parts_;
  const auto mu = static_cast<std::size_t>(m);
  const auto ppu = static_cast<std::size_t>(pp);
  // The event each slot of the simulation holds (Simulation's rows), as it writes them: 0 is
  // the constant 0 (an unset slot).
  std::vector<int> fce(ppu * mu, 0), fse(ppu * mu, 0), frs(ppu * mu, 0), fre(ppu * mu, 0);
  std::vector<int> bce(ppu * mu, 0), bse(ppu * mu, 0), brs(ppu * mu, 0), bre(ppu * mu, 0);
  const auto at = [mu, m](std::vector<int>& row, int i, int j) -> int& {
    return row[static_cast<std::size_t>(i) * mu + static_cast<std::size_t>(j < 0 ? j + m : j)];
  };
  add_.push_back(-1);
  constants_.push_back(0.0);
  in_.push_back({0, 0, 0});
  const auto event = [this](int a, int b, int c, int add) {
    add_.push_back(add);
    in_.push_back({a, b, c});
    return static_cast<int>(add_.size()) - 1;
  };
  const auto constant = [this](double v) {
    constants_.push_back(v);
    return -static_cast<int>(constants_.size());
  };
  const auto fwd = [](int i) { return i; };
  const auto bwd = [pp](int i) { return pp + i; };
  std::vector<int> send_for(ppu), send_back(ppu);
  for (int i = 0; i < pp; ++i) {
    send_for[static_cast<std::size_t>(i)] = constant(for_send_s[i]);
    send_back[static_cast<std::size_t>(i)] = constant(back_send_s[i]);
  }
  std::vector<int> warm(ppu);
  for (int i = 0; i < pp; ++i) {
    warm[static_cast<std::size_t>(i)] = std::min(pp - i - 1, m);
  }
  // Warm-up (Simulation::warm_up, warm_up_event).
  for (int j = 0; j < m; ++j) {
    for (int i = 0; i < std::min(pp, pp - 1 - j); ++i) {
      const int w = warm[static_cast<std::size_t>(i)];
      if (j >= w) {
        continue;
      }
      int end = 0;
      if (i == 0) {
        end = event(j == 0 ? 0 : at(fse, i, j - 1), 0, 0, fwd(i));
      } else if (j == 0 || i == pp - 1) {
        end = event(at(fre, i, j), 0, 0, fwd(i));
      } else {
        end = event(at(fse, i, j - 1), at(fre, i, j), 0, fwd(i));
      }
      at(fce, i, j) = end;
      if (i > 0 && j < w - 1) {
        at(frs, i, j + 1) = end;
      }
      if (i < pp - 1) {
        const int send_end = j == 0 ? event(end, 0, 0, send_for[static_cast<std::size_t>(i)])
                                    : event(end, at(frs, i + 1, j), 0,
                                            send_for[static_cast<std::size_t>(i)]);
        at(fse, i, j) = send_end;
        at(fre, i + 1, j) = send_end;
      }
    }
  }
  // Steady (Simulation::steady).
  for (int j = 0; j < m; ++j) {
    const int first = std::max(0, pp - m + j);
    for (int i = first; i < pp; ++i) {
      const int w = warm[static_cast<std::size_t>(i)];
      const int fid = j + w;
      if (fid > m - 1) {
        continue;
      }
      const bool first_steady = fid == w;
      const int prev_id = first_steady ? fid - 1 : j - 1;
      int end = 0;
      if (first_steady) {
        end = event(prev_id >= 0 ? at(fse, i, prev_id) : 0, at(fre, i, fid), 0, fwd(i));
      } else if (i == 0) {
        end = event(at(bce, i, prev_id), 0, 0, fwd(i));
      } else {
        end = event(at(bse, i, prev_id), at(fre, i, fid), 0, fwd(i));
      }
      at(fce, i, fid) = end;
      if (i < pp - 1) {
        at(brs, i, j) = end;
        const int next_recv_start = (first_steady && prev_id < 0) ? 0 : at(frs, i + 1, fid);
        const int send_end =
            event(end, next_recv_start, 0, send_for[static_cast<std::size_t>(i)]);
        at(fse, i, fid) = send_end;
        at(fre, i + 1, fid) = send_end;
      }
    }
    const int bid = j;
    for (int i = pp - 1; i >= first; --i) {
      const int w = warm[static_cast<std::size_t>(i)];
      if (bid > m - w - 1) {
        continue;
      }
      const int fid = bid + w;
      const int end =
          event(i > 0 ? at(fse, i, fid) : 0, at(bre, i, bid), at(fce, i, fid), bwd(i));
      at(bce, i, bid) = end;
      if (i > 0) {
        if (fid + 1 < m) {
          at(frs, i, fid + 1) = end;
        } else if (bid + 1 < m) {
          at(brs, i, bid + 1) = end;
        }
        const int send_end =
            event(end, at(brs, i - 1, bid), 0, send_back[static_cast<std::size_t>(i)]);
        at(bse, i, bid) = send_end;
        at(bre, i - 1, bid) = send_end;
      } else if (bid == m - 1 - w && bid + 1 < m) {
        at(brs, i, bid + 1) = end;
      }
    }
  }
  // Cool-down (Simulation::cool_down).
  for (int j = 0; j < m; ++j) {
    for (int i = std::min(pp - 1, pp - 1 - m + j); i >= 0; --i) {
      const int w = warm[static_cast<std::size_t>(i)];
      const int bid = j;
      if (bid < m - w) {
        continue;
      }
      const int end = event(at(bce, i, bid - 1), at(bre, i, bid), at(bse, i, bid - 1), bwd(i));
      at(bce, i, bid) = end;
      if (bid < m - 1) {
        at(brs, i, bid + 1) = end;
      }
      if (i > 0) {
        const int send_end =
            event(end, at(brs, i - 1, bid), 0, send_back[static_cast<std::size_t>(i)]);
        at(bse, i, bid) = send_end;
        at(bre, i - 1, bid) = send_end;
      }
    }
  }
  last_.resize(ppu);
  for (int i = 0; i < pp; ++i) {
    last_[static_cast<std::size_t>(i)] = at(bce, i, m - 1);
  }
  value_.resize(add_.size());
  pass_.resize(2 * ppu);
}

double OneFOneBGraph::critical_path(const double* comp_s, double* ends, double* coef,
                                    double* constant) {
  const auto ppu = static_cast<std::size_t>(pp_);
  for (std::size_t u = 0; u < ppu; ++u) {
    // As fill_stage_passes.
    pass_[u] = comp_s[u] / parts_;
    pass_[ppu + u] = fwbw_ * comp_s[u] / parts_;
  }
  const auto addend = [this](int add) {
    return add >= 0 ? pass_[static_cast<std::size_t>(add)]
                    : constants_[static_cast<std::size_t>(-1 - add)];
  };
  value_[0] = 0.0;
  for (std::size_t k = 1; k < add_.size(); ++k) {
    const std::array<int, 3>& in = in_[k];
    const double start =
        std::max({value_[static_cast<std::size_t>(in[0])], value_[static_cast<std::size_t>(in[1])],
                  value_[static_cast<std::size_t>(in[2])]});
    value_[k] = start + addend(add_[k]);
  }
  std::size_t latest = 0;
  for (std::size_t u = 0; u < ppu; ++u) {
    ends[u] = value_[static_cast<std::size_t>(last_[u])];
    if (ends[u] > ends[latest]) {
      latest = u;
    }
  }
  // Back from the latest end along the inputs that set each event.
  std::fill(coef, coef + ppu, 0.0);
  double sends = 0.0;
  auto k = static_cast<std::size_t>(last_[latest]);
  while (k != 0) {
    const int add = add_[k];
    if (add >= 0 && add < pp_) {
      coef[add] += fwd_share_;
    } else if (add >= pp_) {
      coef[add - pp_] += fwbw_ / parts_;
    } else {
      sends += constants_[static_cast<std::size_t>(-1 - add)];
    }
    const std::array<int, 3>& in = in_[k];
    std::size_t from = static_cast<std::size_t>(in[0]);
    for (std::size_t t = 1; t < 3; ++t) {
      if (value_[static_cast<std::size_t>(in[t])] > value_[from]) {
        from = static_cast<std::size_t>(in[t]);
      }
    }
    k = from;
  }
  *constant = sends;
  return ends[latest];
}

StagePasses stage_passes(int micro_batches, int pp, const double* comp_s, ForwardShare share) {
  const auto ppu = static_cast<std::size_t>(pp);
  StagePasses out{std::vector<double>(ppu), std::vector<double>(ppu), std::vector<int>(ppu)};
  fill_stage_passes(micro_batches, pp, comp_s, share, out.forward_s.data(), out.backward_s.data(),
                    out.warm_up.data());
  return out;
}

StopBounds stop_bounds(const StagePasses& passes) {
  const std::size_t ppu = passes.forward_s.size();
  StopBounds out{std::vector<double>(ppu), std::vector<double>(ppu), std::vector<double>(ppu),
                 0.0};
  out.slowest_backward_s =
      fill_stop_bounds(static_cast<int>(ppu), passes.forward_s.data(), passes.backward_s.data(),
                       out.up.data(), out.slow_up.data(), out.down.data());
  return out;
}

std::vector<double> simulate_1f1b(int m, const StageTimes& times, ForwardShare share) {
  const int pp = static_cast<int>(times.comp_s.size());
  std::vector<double> ends(static_cast<std::size_t>(pp));
  simulate_1f1b_into(m, pp, times.comp_s.data(), times.for_send_s.data(),
                     times.back_send_s.data(), share, std::numeric_limits<double>::infinity(),
                     ends.data());
  return ends;
}

} // namespace zerosearch
