// The schedule's events come from simulate_1f1b_into itself (pipeline.cpp), so the timeline
// shows exactly the simulation the estimate uses; tests/model/test_schedule.cpp checks the
// stage ends against simulate_1f1b.
#include "zerosearch/model/schedule.hpp"

#include <limits>

#include "zerosearch/model/pipeline.hpp"

namespace zerosearch {

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
  // The events of the one 1F1B simulation (pipeline.cpp); a send starts its duration before
  // it ends.
  OneFOneBEvents ev;
  out.stage_end_s.resize(static_cast<std::size_t>(pp));
  simulate_1f1b_into(m, pp, times.comp_s.data(), times.for_send_s.data(),
                     times.back_send_s.data(), share, std::numeric_limits<double>::infinity(),
                     out.stage_end_s.data(), &ev);
  const auto mu = static_cast<std::size_t>(m);
  for (int i = 0; i < pp; ++i) {
    const auto u = static_cast<std::size_t>(i);
    for (int j = 0; j < m; ++j) {
      const std::size_t k = u * mu + static_cast<std::size_t>(j);
      add(ScheduleEventKind::forward, i, j, ev.forward_start[k], ev.forward_end[k]);
      if (i + 1 < pp) {
        add(ScheduleEventKind::send_forward, i, j, ev.forward_send_end[k] - times.for_send_s[u],
            ev.forward_send_end[k]);
      }
      add(ScheduleEventKind::backward, i, j, ev.backward_start[k], ev.backward_end[k]);
      if (i > 0) {
        add(ScheduleEventKind::send_backward, i, j,
            ev.backward_send_end[k] - times.back_send_s[u], ev.backward_send_end[k]);
      }
    }
  }
  return out;
}

} // namespace zerosearch
