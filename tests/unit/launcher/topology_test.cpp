// The ranks of a run from the environment and the options: a plain start, torchrun's workers,
// srun tasks, PyTorchJob pods (each through an environment lookup, as the scheduler would set it),
// the options overriding them, the errors, and the split of the CPU between local ranks.
#include "launcher/topology.h"

#include <gtest/gtest.h>

#include <map>
#include <string>

#include "core/errors.h"
#include "support/matchers.h"

// GCC 12 at -O3 takes the assignment of a Sourced<int> into an empty std::optional member for a
// read of the string inside it (a known false positive of -Wmaybe-uninitialized).
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif

namespace dl::test {
namespace {

using Vars = std::map<std::string, std::string>;

SchedulerEnv detect(const Vars& vars) {
  return detect_scheduler([vars](const char* name) -> std::optional<std::string> {
    const auto it = vars.find(name);
    if (it == vars.end()) return std::nullopt;
    return it->second;
  });
}

// A plan on `gpus` GPUs (device cuda:0 when there are any), the default program unless told.
Topology topology(const Vars& vars, const RankRequest& req = {}, int gpus = 0,
                  bool default_program = true, const std::string& device_asked = "auto") {
  const std::string device = gpus > 0 && device_asked != "cpu" ? "cuda:0" : "cpu";
  return plan_topology(detect(vars), req, device, device_asked, gpus, default_program);
}

// The code of the UserError `f` throws, with its message checked for `part`.
template <class F>
int error_code(F&& f, const std::string& part) {
  try {
    f();
  } catch (const UserError& e) {
    EXPECT_TRUE(contains(e.what(), part)) << e.what();
    return e.code();
  }
  ADD_FAILURE() << "expected a UserError";
  return 0;
}

// --- A plain start --------------------------------------------------------------------------

TEST(Topology, PlainCpuIsOneProcessOnAFreePort) {
  const Topology t = topology({});
  EXPECT_EQ(t.scheduler, "none");
  EXPECT_EQ(t.nproc.value, 1);
  EXPECT_EQ(t.world_size.value, 1);
  EXPECT_EQ(t.master_addr.value, "127.0.0.1");
  EXPECT_TRUE(t.pick_free_port);
  EXPECT_FALSE(t.check_port);
}

TEST(Topology, AutoIsOneProcessPerGpuForDlTrainAndOneForACommand) {
  EXPECT_EQ(topology({}, {}, 4).nproc.value, 4);
  EXPECT_EQ(topology({}, {}, 4).world_size.value, 4);
  EXPECT_EQ(topology({}, {}, 4, /*default_program=*/false).nproc.value, 1);
  RankRequest req;
  req.nproc_per_node = {"auto", "--nproc-per-node"};
  EXPECT_EQ(topology({}, req, 4, false).nproc.value, 4);
  // One GPU named with --device: that one, one process.
  EXPECT_EQ(topology({}, {}, 4, true, "cuda:2").nproc.value, 1);
}

TEST(Topology, NprocNumbersAndGpu) {
  RankRequest req;
  req.nproc_per_node = {"3", "--nproc-per-node"};
  EXPECT_EQ(topology({}, req).nproc.value, 3);  // CPU: any number
  EXPECT_EQ(topology({}, req).local_world_size, 3);
  req.nproc_per_node = {"gpu", "--nproc-per-node"};
  EXPECT_EQ(topology({}, req, 2).nproc.value, 2);
  EXPECT_EQ(error_code([&] { topology({}, req, 0); }, "no NVIDIA GPU visible"),
            exit_code::kUnavailable);
  req.nproc_per_node = {"3", "--nproc-per-node"};
  EXPECT_EQ(error_code([&] { topology({}, req, 2); }, "only 2 GPUs visible"),
            exit_code::kUnavailable);
  req.nproc_per_node = {"2", "--nproc-per-node"};
  EXPECT_EQ(error_code([&] { topology({}, req, 4, true, "cuda:1"); }, "CUDA_VISIBLE_DEVICES"),
            exit_code::kUsage);
}

TEST(Topology, SeveralNodesByHand) {
  RankRequest req;
  req.nproc_per_node = {"2", "--nproc-per-node"};
  req.nnodes = Sourced<int>{3, "--nnodes"};
  req.node_rank = Sourced<int>{1, "--node-rank"};
  req.master_addr = Sourced<std::string>{"10.0.0.1", "--master-addr"};
  const Topology t = topology({}, req);
  EXPECT_EQ(t.world_size.value, 6);
  EXPECT_EQ(t.first_rank, 2);
  EXPECT_EQ(t.local_world_size, 2);
  EXPECT_EQ(t.node_rank.value, 1);
  EXPECT_EQ(t.master_addr.value, "10.0.0.1");
  EXPECT_EQ(t.master_port.value, 29500);  // torchrun's default, the same on every node
  EXPECT_FALSE(t.pick_free_port);
  EXPECT_FALSE(t.check_port);  // rank 0 is not started here
  req.node_rank = Sourced<int>{0, "--node-rank"};
  EXPECT_TRUE(topology({}, req).check_port);
}

TEST(Topology, SeveralNodesNeedTheMasterAddress) {
  RankRequest req;
  req.nnodes = Sourced<int>{2, "--nnodes"};
  EXPECT_EQ(error_code([&] { topology({}, req); }, "--master-addr"), exit_code::kUsage);
  req.node_rank = Sourced<int>{2, "--node-rank"};
  req.master_addr = Sourced<std::string>{"h", "--master-addr"};
  EXPECT_EQ(error_code([&] { topology({}, req); }, "--node-rank 2 is not below --nnodes 2"),
            exit_code::kUsage);
}

TEST(Topology, AGivenPortIsCheckedOnOneNode) {
  RankRequest req;
  req.master_port = Sourced<int>{4321, "--master-port"};
  const Topology t = topology({}, req);
  EXPECT_EQ(t.master_port.value, 4321);
  EXPECT_EQ(t.master_port.reason, "from --master-port");
  EXPECT_FALSE(t.pick_free_port);
  EXPECT_TRUE(t.check_port);
}

TEST(Topology, SlurmJobWithoutSrunIsPlainWithANote) {
  const Topology t =
      topology({{"SLURM_JOB_ID", "77"}, {"SLURM_PROCID", "0"}, {"SLURM_NTASKS", "4"}});
  EXPECT_EQ(t.scheduler, "none");
  ASSERT_EQ(t.notes.size(), 1u);
  EXPECT_TRUE(contains(t.notes[0], "srun")) << t.notes[0];
}

// --- torchrun ---------------------------------------------------------------------------------

const Vars kTorchrun = {{"TORCHELASTIC_RUN_ID", "abc"},
                        {"RANK", "5"},
                        {"LOCAL_RANK", "1"},
                        {"WORLD_SIZE", "8"},
                        {"LOCAL_WORLD_SIZE", "4"},
                        {"GROUP_RANK", "1"},
                        {"MASTER_ADDR", "host0"},
                        {"MASTER_PORT", "29400"}};

TEST(Topology, TorchrunWorkerIsOneProcessWithItsValuesKept) {
  const Topology t = topology(kTorchrun, {}, 4);
  EXPECT_EQ(t.scheduler, "torchrun");
  EXPECT_TRUE(t.one_worker);
  EXPECT_EQ(t.nproc.value, 1);
  EXPECT_EQ(t.first_rank, 5);
  EXPECT_EQ(t.first_local_rank, 1);
  EXPECT_EQ(t.world_size.value, 8);
  EXPECT_EQ(t.local_world_size, 4);
  EXPECT_EQ(t.node_rank.value, 1);
  EXPECT_EQ(t.master_addr.value, "host0");
  EXPECT_EQ(t.master_addr.reason, "from MASTER_ADDR");
  EXPECT_EQ(t.master_port.value, 29400);
  EXPECT_FALSE(t.check_port);
  EXPECT_EQ(rank_device(t, "cuda:0", "auto", 4, 0), "cuda:1");
  EXPECT_EQ(detect(kTorchrun).run_name, "torchrun-abc");
}

TEST(Topology, TheBareContractIsOneWorkerToo) {
  const Topology t = topology({{"RANK", "3"}, {"WORLD_SIZE", "8"}});
  EXPECT_TRUE(t.one_worker);
  EXPECT_EQ(t.first_rank, 3);
  EXPECT_EQ(t.first_local_rank, 0);
  EXPECT_EQ(t.world_size.value, 8);
  EXPECT_EQ(t.master_port.value, 29500);
}

TEST(Topology, TorchrunWorkerRefusesSeveralProcessesAndBadValues) {
  RankRequest req;
  req.nproc_per_node = {"4", "--nproc-per-node"};
  EXPECT_EQ(error_code([&] { topology(kTorchrun, req); }, "exactly one process"),
            exit_code::kUsage);
  Vars bad = kTorchrun;
  bad["RANK"] = "8";
  EXPECT_EQ(error_code([&] { detect(bad); }, "RANK 8 is not below WORLD_SIZE 8"),
            exit_code::kUsage);
  bad["RANK"] = "x";
  EXPECT_EQ(error_code([&] { detect(bad); }, "RANK: expected a whole number"), exit_code::kUsage);
}

TEST(Topology, OptionsOverrideTheScheduler) {
  RankRequest req;
  req.master_port = Sourced<int>{1234, "--master-port"};
  req.master_addr = Sourced<std::string>{"other", "--master-addr"};
  const Topology t = topology(kTorchrun, req);
  EXPECT_EQ(t.master_port.value, 1234);
  EXPECT_EQ(t.master_addr.value, "other");
  EXPECT_EQ(t.master_addr.reason, "from --master-addr");
}

// --- Slurm --------------------------------------------------------------------------------------

// Task 6 of 8 (two nodes of four tasks), on the second node.
const Vars kSlurm = {{"SLURM_JOB_ID", "123456"},
                     {"SLURM_STEP_ID", "0"},
                     {"SLURM_PROCID", "6"},
                     {"SLURM_LOCALID", "2"},
                     {"SLURM_NTASKS", "8"},
                     {"SLURM_NODEID", "1"},
                     {"SLURM_JOB_NODELIST", "gpu[07-08]"},
                     {"SLURM_TASKS_PER_NODE", "4(x2)"},
                     {"SLURM_JOB_NUM_NODES", "2"}};

TEST(Topology, SlurmTaskIsOneRank) {
  const SchedulerEnv env = detect(kSlurm);
  EXPECT_EQ(env.kind, SchedulerEnv::Kind::kSlurm);
  EXPECT_EQ(env.run_name, "slurm-123456.0");
  const Topology t = topology(kSlurm, {}, 4);
  EXPECT_EQ(t.scheduler, "slurm");
  EXPECT_TRUE(t.one_worker);
  EXPECT_EQ(t.nproc.value, 1);
  EXPECT_EQ(t.first_rank, 6);
  EXPECT_EQ(t.first_local_rank, 2);
  EXPECT_EQ(t.world_size.value, 8);
  EXPECT_EQ(t.local_world_size, 4);
  EXPECT_EQ(t.nnodes.value, 2);
  EXPECT_EQ(t.node_rank.value, 1);
  EXPECT_EQ(t.master_addr.value, "gpu07");
  EXPECT_EQ(t.master_addr.reason, "from the first host of SLURM_JOB_NODELIST");
  EXPECT_EQ(t.master_port.value, 10000 + 123456 % 50000);
  EXPECT_TRUE(contains(t.master_port.reason, "SLURM_JOB_ID")) << t.master_port.reason;
  EXPECT_EQ(rank_device(t, "cuda:0", "auto", 4, 0), "cuda:2");
  // srun --gpus-per-task: the task sees its own GPU only.
  EXPECT_EQ(rank_device(t, "cuda:0", "auto", 1, 0), "cuda:0");
}

TEST(Topology, SlurmNtasksPerNodeAndTheStepsNodeList) {
  Vars v = kSlurm;
  v["SLURM_NTASKS_PER_NODE"] = "4";
  v["SLURM_STEP_NODELIST"] = "gpu08";
  v.erase("SLURM_TASKS_PER_NODE");
  v.erase("SLURM_JOB_NUM_NODES");
  const Topology t = topology(v);
  EXPECT_EQ(t.local_world_size, 4);
  EXPECT_EQ(t.master_addr.value, "gpu08");
  EXPECT_EQ(t.nnodes.value, 1);  // counted from the step's list
}

TEST(Topology, SlurmMasterAddrInTheEnvironmentWins) {
  Vars v = kSlurm;
  v["MASTER_ADDR"] = "10.1.1.1";
  v["MASTER_PORT"] = "29999";
  const Topology t = topology(v);
  EXPECT_EQ(t.master_addr.value, "10.1.1.1");
  EXPECT_EQ(t.master_port.value, 29999);
}

TEST(Topology, UnreadableNodeListIsARendezvousError) {
  Vars v = kSlurm;
  v["SLURM_JOB_NODELIST"] = "gpu[07-";
  EXPECT_EQ(error_code([&] { topology(v); }, "SLURM_JOB_NODELIST 'gpu[07-'"),
            exit_code::kRendezvous);
  // --master-addr replaces what could not be read.
  RankRequest req;
  req.master_addr = Sourced<std::string>{"gpu07", "--master-addr"};
  EXPECT_EQ(topology(v, req).master_addr.value, "gpu07");
  v.erase("SLURM_JOB_NODELIST");
  EXPECT_EQ(error_code([&] { topology(v); }, "SLURM_JOB_NODELIST is not set"),
            exit_code::kRendezvous);
}

// --- Kubeflow PyTorchJob --------------------------------------------------------------------

// Worker pod 2 of a job with a Master and two Workers, two processes per pod.
const Vars kPyTorchJob = {{"MASTER_ADDR", "job-master-0"},
                          {"MASTER_PORT", "23456"},
                          {"RANK", "2"},
                          {"WORLD_SIZE", "3"},
                          {"PET_NPROC_PER_NODE", "2"},
                          {"PET_NNODES", "3"},
                          {"PET_NODE_RANK", "2"}};

TEST(Topology, PyTorchJobPodStartsItsProcesses) {
  const Topology t = topology(kPyTorchJob, {}, 2);
  EXPECT_EQ(t.scheduler, "pytorchjob");
  EXPECT_FALSE(t.one_worker);
  EXPECT_EQ(t.nproc.value, 2);
  EXPECT_EQ(t.nproc.reason, "from PET_NPROC_PER_NODE");
  EXPECT_EQ(t.nnodes.value, 3);
  EXPECT_EQ(t.node_rank.value, 2);
  EXPECT_EQ(t.world_size.value, 6);  // not the pods' WORLD_SIZE
  EXPECT_EQ(t.first_rank, 4);
  EXPECT_EQ(t.master_addr.value, "job-master-0");
  EXPECT_EQ(t.master_port.value, 23456);
  EXPECT_FALSE(t.check_port);
}

TEST(Topology, PyTorchJobRankIsThePodIndexAndAutoCountsGpus) {
  Vars v = kPyTorchJob;
  v.erase("PET_NODE_RANK");
  v["RANK"] = "0";
  v["PET_NPROC_PER_NODE"] = "auto";
  const Topology t = topology(v, {}, 4);
  EXPECT_EQ(t.node_rank.value, 0);
  EXPECT_EQ(t.node_rank.reason, "from RANK");
  EXPECT_EQ(t.nproc.value, 4);
  EXPECT_EQ(t.world_size.value, 12);
  EXPECT_TRUE(t.check_port);  // the master pod starts rank 0
  v["PET_NNODES"] = "1:3";
  EXPECT_EQ(error_code([&] { detect(v); }, "elastic"), exit_code::kUsage);
}

// --- The CPU's split ------------------------------------------------------------------------

TEST(CpuShare, CoresSplitAsEvenlyAsPossible) {
  EXPECT_EQ(split_cores(8, 2), std::vector<int>({4, 4}));
  EXPECT_EQ(split_cores(7, 3), std::vector<int>({3, 2, 2}));
  EXPECT_EQ(split_cores(2, 4), std::vector<int>({1, 1, 1, 1}));  // at least one each
  EXPECT_EQ(split_cores(5, 1), std::vector<int>({5}));
}

TEST(CpuShare, CpusSplitIntoDisjointBlocks) {
  const auto blocks = split_cpus({0, 1, 2, 3, 8, 9, 10}, 3);
  ASSERT_TRUE(blocks);
  EXPECT_EQ(*blocks, (std::vector<std::vector<int>>{{0, 1, 2}, {3, 8}, {9, 10}}));
  EXPECT_FALSE(split_cpus({0, 1}, 3));
  EXPECT_EQ(cpu_list_text({0, 1, 2, 3, 8, 10, 11}), "0-3,8,10-11");
  EXPECT_EQ(cpu_list_text({}), "");
}

TEST(CpuShare, SlurmPortIsDerivedFromTheJobId) {
  EXPECT_EQ(slurm_port(0), 10000);
  EXPECT_EQ(slurm_port(123456), 33456);
  EXPECT_EQ(slurm_port(49999), 59999);
}

}  // namespace
}  // namespace dl::test
