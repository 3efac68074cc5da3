// The same rules as simulate_1f1b (pipeline.cpp), step for step, recording every pass and send
// instead of only the stage ends. Kept separate so that simulate_1f1b stays free to be
// optimised; tests/model/test_schedule.cpp checks that the two agree exactly.
#include "zerosearch/model/schedule.hpp"

#include <algorithm>

namespace zerosearch {

namespace {

/// Event times of one stage, one entry per micro-batch (zero until set, as in the original).
struct Times {
  explicit Times(std::size_t m)
      : fce(m), fse(m), frs(m), fre(m), bce(m), bse(m), brs(m), bre(m) {}
  std::vector<double> fce, fse, frs, fre, bce, bse, brs, bre;
};

/// Python list indexing: -1 is the last element.
double& at(std::vector<double>& v, int i) {
  return v[static_cast<std::size_t>(i < 0 ? i + static_cast<int>(v.size()) : i)];
}

} // namespace

PipelineSchedule pipeline_schedule(int m, const StageTimes& times, ForwardShare share) {
  const int pp = static_cast<int>(times.comp_s.size());
  const double fwbw = share == ForwardShare::quarter ? 3.0 : 2.0;
  const double parts = share == ForwardShare::quarter ? 4.0 : 3.0;
  PipelineSchedule out;
  const auto add = [&out](ScheduleEventKind k, int stage, int mb, double start, double end) {
    out.events.push_back(ScheduleEvent{k, stage, mb, start, end});
  };
  if (pp == 1) {
    const double f = times.comp_s[0] / parts;
    const double b = fwbw * times.comp_s[0] / parts;
    double t = 0.0;
    for (int j = 0; j < m; ++j) {
      add(ScheduleEventKind::forward, 0, j, t, t + f);
      add(ScheduleEventKind::backward, 0, j, t + f, t + f + b);
      t += f + b;
    }
    out.stage_end_s = {t};
    return out;
  }
  std::vector<Times> st(static_cast<std::size_t>(pp), Times(static_cast<std::size_t>(m)));
  std::vector<double> fwd(static_cast<std::size_t>(pp));
  std::vector<double> bwd(static_cast<std::size_t>(pp));
  std::vector<int> warm(static_cast<std::size_t>(pp));
  for (int i = 0; i < pp; ++i) {
    const auto u = static_cast<std::size_t>(i);
    fwd[u] = times.comp_s[u] / parts;
    bwd[u] = fwbw * times.comp_s[u] / parts;
    warm[u] = std::min(pp - i - 1, m);
  }
  const auto S = [&](int i) -> Times& { return st[static_cast<std::size_t>(i)]; };
  const auto send_for = [&](int i) { return times.for_send_s[static_cast<std::size_t>(i)]; };
  const auto send_back = [&](int i) { return times.back_send_s[static_cast<std::size_t>(i)]; };
  const auto F = [&](int i) { return fwd[static_cast<std::size_t>(i)]; };
  const auto B = [&](int i) { return bwd[static_cast<std::size_t>(i)]; };
  const auto W = [&](int i) { return warm[static_cast<std::size_t>(i)]; };

  // Warm-up forwards.
  for (int j = 0; j < m; ++j) {
    for (int i = 0; i < pp; ++i) {
      const int w = W(i);
      if (j >= w) {
        continue;
      }
      auto& s = S(i);
      double start = 0.0;
      if (i == 0) {
        start = j == 0 ? 0.0 : at(s.fse, j - 1);
      } else if (j == 0 || i == pp - 1) {
        start = at(s.fre, j);
      } else {
        start = std::max(at(s.fse, j - 1), at(s.fre, j));
      }
      const double end = start + F(i);
      add(ScheduleEventKind::forward, i, j, start, end);
      at(s.fce, j) = end;
      if (i > 0 && j < w - 1) {
        at(s.frs, j + 1) = end;
      }
      if (i < pp - 1) {
        auto& next = S(i + 1);
        const double send_start = j == 0 ? end : std::max(end, at(next.frs, j));
        const double send_end = send_start + send_for(i);
        add(ScheduleEventKind::send_forward, i, j, send_start, send_end);
        at(s.fse, j) = send_end;
        at(next.fre, j) = send_end;
      }
    }
  }

  // Steady state: one forward, one backward.
  for (int j = 0; j < m; ++j) {
    for (int i = 0; i < pp; ++i) {
      const int w = W(i);
      const int fid = j + w;
      if (fid > m - 1) {
        continue;
      }
      auto& s = S(i);
      double start = 0.0;
      const bool first_steady = fid == w;
      const int prev_id = first_steady ? fid - 1 : j - 1;
      if (first_steady) {
        const double prev_send_end = prev_id >= 0 ? at(s.fse, prev_id) : 0.0;
        start = std::max(prev_send_end, at(s.fre, fid));
      } else if (i == 0) {
        start = at(s.bce, prev_id);
      } else {
        start = std::max(at(s.bse, prev_id), at(s.fre, fid));
      }
      const double end = start + F(i);
      add(ScheduleEventKind::forward, i, fid, start, end);
      at(s.fce, fid) = end;
      if (i < pp - 1) {
        auto& next = S(i + 1);
        at(s.brs, j) = end;
        const double next_recv_start = (first_steady && prev_id < 0) ? 0.0 : at(next.frs, fid);
        const double send_start = std::max(end, next_recv_start);
        const double send_end = send_start + send_for(i);
        add(ScheduleEventKind::send_forward, i, fid, send_start, send_end);
        at(s.fse, fid) = send_end;
        at(next.fre, fid) = send_end;
      }
    }
    const int bid = j;
    for (int i = pp - 1; i >= 0; --i) {
      const int w = W(i);
      if (bid > m - w - 1) {
        continue;
      }
      auto& s = S(i);
      const int fid = bid + w;
      const double prev_send_end = i > 0 ? at(s.fse, fid) : 0.0;
      const double start = std::max({prev_send_end, at(s.bre, bid), at(s.fce, fid)});
      const double end = start + B(i);
      add(ScheduleEventKind::backward, i, bid, start, end);
      at(s.bce, bid) = end;
      if (i > 0) {
        auto& prev = S(i - 1);
        if (fid + 1 < m) {
          at(s.frs, fid + 1) = end;
        } else if (bid + 1 < m) {
          at(s.brs, bid + 1) = end;
        }
        const double send_start = std::max(end, at(prev.brs, bid));
        const double send_end = send_start + send_back(i);
        add(ScheduleEventKind::send_backward, i, bid, send_start, send_end);
        at(s.bse, bid) = send_end;
        at(prev.bre, bid) = send_end;
      } else if (bid == m - 1 - w && bid + 1 < m) {
        at(s.brs, bid + 1) = end;
      }
    }
  }

  // Cool-down backwards.
  for (int j = 0; j < m; ++j) {
    for (int i = pp - 1; i >= 0; --i) {
      const int w = W(i);
      const int bid = j;
      if (bid < m - w) {
        continue;
      }
      auto& s = S(i);
      const double start = std::max({at(s.bce, bid - 1), at(s.bre, bid), at(s.bse, bid - 1)});
      const double end = start + B(i);
      add(ScheduleEventKind::backward, i, bid, start, end);
      at(s.bce, bid) = end;
      if (bid < m - 1) {
        at(s.brs, bid + 1) = end;
      }
      if (i > 0) {
        auto& prev = S(i - 1);
        const double send_start = std::max(end, at(prev.brs, bid));
        const double send_end = send_start + send_back(i);
        add(ScheduleEventKind::send_backward, i, bid, send_start, send_end);
        at(s.bse, bid) = send_end;
        at(prev.bre, bid) = send_end;
      }
    }
  }

  out.stage_end_s.resize(static_cast<std::size_t>(pp));
  for (int i = 0; i < pp; ++i) {
    out.stage_end_s[static_cast<std::size_t>(i)] = at(S(i).bce, m - 1);
  }
  return out;
}

} // namespace zerosearch
