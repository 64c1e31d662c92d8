// Writes a run report from known data, for the browser test (report_check.py): N epochs of
// made-up but plausible metrics, a resource history, a KxK confusion matrix whose class names
// need escaping, and a plan.json-like plan (or none). --break script|fetch spoils the page on
// purpose (a script that throws, an image from the network), so that the check is seen to fail.
//
//   dl_report_sample OUT_DIR [--epochs N] [--classes K] [--no-plan] [--finished]
//                    [--break script|fetch]
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "core/dir_fd.h"
#include "report/plan_summary.h"
#include "report/run_report.h"

namespace {

constexpr const char* kPlan = R"({
  "format": "dl-launch-plan", "version": 1,
  "facts": {"cpu": {"online": 8, "usable": 6, "reason": "affinity 0-5 <of 8>"},
            "memory": {"total_bytes": 17179869184, "usable_bytes": 8589934592,
                       "reason": "cgroup limit & \"available\""},
            "shm": {"present": true, "total_bytes": 8589934592, "free_bytes": 8000000000},
            "gpu": {"note": "NVML: 1 GPU", "driver_version": "535.1",
                    "devices": [{"index": 0, "name": "A100 <80GB>", "total_bytes": 85899345920,
                                 "free_bytes": 80000000000, "compute_capability": "8.0"}]}},
  "plan": {"device": {"value": "cuda", "reason": "a GPU is visible"},
           "precision": {"value": "bf16", "reason": "compute capability 8.0 >= 8.0"},
           "workers": {"value": 4, "reason": "cores - threads"},
           "threads": {"value": 2, "reason": "<script>alert(1)</script>"},
           "batch_size": {"value": 512, "reason": "largest that fit in 90% of VRAM"},
           "warnings": ["shm is small"]},
  "ranks": {"world_size": {"value": 1, "reason": "one process"}}
})";

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: dl_report_sample OUT_DIR [options]\n");
    return 2;
  }
  int epochs = 5, classes = 10;
  bool plan = true, finished = false;
  std::string spoil;
  for (int i = 2; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--epochs" && i + 1 < argc)
      epochs = std::atoi(argv[++i]);
    else if (a == "--classes" && i + 1 < argc)
      classes = std::atoi(argv[++i]);
    else if (a == "--no-plan")
      plan = false;
    else if (a == "--finished")
      finished = true;
    else if (a == "--break" && i + 1 < argc)
      spoil = argv[++i];
    else {
      std::fprintf(stderr, "dl_report_sample: unknown argument %s\n", a.c_str());
      return 2;
    }
  }
  using namespace dl::report;
  RunReport r;
  r.run_name = "sample <run> & \"quotes\"";
  r.run_dir = "/tmp/runs/sample";
  r.updated = "2026-12-01 02:00:00 UTC";
  r.epochs_total = epochs + (finished ? 0 : 3);
  r.state = finished ? RunState::kFinished : RunState::kRunning;
  if (finished) r.state_detail = "done: validation accuracy 90.00%";
  if (plan) {
    read_plan_json(kPlan, r);
  } else {
    r.plan_note = "no plan.json: dl-train ran without dl-launch";
  }
  r.setup = {{"model", "cnn", ""}, {"device", "cpu", ""}};
  for (int e = 1; e <= epochs; ++e) {
    const double t = e;
    r.epochs.push_back({e,
                        0.9 / t,
                        0.7 + 0.2 * (1 - 1 / t),
                        0.95 / t,
                        0.68 + 0.2 * (1 - 1 / t),
                        1e-3 * 0.5 * (1 + std::cos(M_PI * (e - 1) / epochs)),
                        20.0,
                        1500.0 + 10 * e,
                        12.0 - e,
                        // 20 s an epoch: the data wait shrinks as compute grows, the rest stays.
                        {{"data", 2.4 - 0.2 * t},
                         {"copy", 0.2},
                         {"compute", 14.0 + 0.2 * t},
                         {"optimizer", 1.0},
                         {"exchange", 0.0},
                         {"checkpoint", 0.4},
                         {"eval", 1.6},
                         {"other", 0.4}},
                        "compute-bound"});
  }
  for (int s = 0; s < 40; ++s) {
    ResourcePoint p;
    p.seconds = 15.0 * s;
    p.cpu_percent = 60 + 20 * std::sin(s / 5.0);
    p.ram_percent = 30 + 0.2 * s;
    p.gpus.push_back({0, 90.0, 45.0});
    r.resources.push_back(p);
  }
  for (int k = 0; k < classes; ++k) r.class_names.push_back("class <" + std::to_string(k) + ">");
  for (int t = 0; t < classes; ++t) {
    for (int p = 0; p < classes; ++p) r.confusion.push_back(t == p ? 80 + t : (t + p) % 3);
  }
  if (epochs > 0) r.best = RunReport::Best{epochs, r.epochs.back().val_acc, "/tmp/runs/s/best.pt"};

  std::string html = render_run_report(r);
  if (!spoil.empty()) {
    const std::string bad = spoil == "script" ? "<script>no_such_function();</script>"
                                              : "<img src=\"http://192.0.2.1/pixel.png\" alt=\"\">";
    html.insert(html.rfind("</body>"), bad);
  }
  const dl::DirFd dir = dl::DirFd::open(argv[1]);
  dir.write_file(kReportFile, html);
  return 0;
}
