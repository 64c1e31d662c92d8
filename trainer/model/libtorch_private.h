// The one place that lists where the trainer leans on LibTorch beyond what it documents, with the
// versions each was checked against. No LibTorch header here: the facts, for the code that relies
// on them and for tests/unit/model/libtorch_private_test.cpp, which fails, naming this file, on a
// LibTorch outside the checked range or where one of them no longer holds.
//
// Checked against: LibTorch 1.13 (Debian 12's libtorch-dev 1.13.1, whose torch/version.h says
// 1.13.0, and the image's 1.13.0 cu116 zip) and 2.6 (Debian trixie's libtorch-cuda-dev,
// tests/cuda_build): headers read, and the test here (1.13) or its probes in that build's chroot
// (2.6) run. The range goes on to the LibTorch inside PyTorch 2.11 (tests/gpu), whose headers were
// not read here: the test runs there with the unit tests.
//
//   1. adamw_state.cpp: Optimizer::state() is keyed by the parameter's TensorImpl address, printed
//      as a string up to 2.1 (c10::guts::to_string) and the pointer itself (void*) from 2.2 on.
//      The public accessor is state(); its key is not documented, but LibTorch's own optimizer
//      serialisation (torch/optim/serialize.h, optimizer.save/load) builds it the same way from
//      unsafeGetTensorImpl, so that way out rebuilds the same key inside LibTorch. It writes its
//      own archive, not Python's optimizer.state_dict(): a checkpoint written with it would no
//      longer load in Python's torch.load + optimizer.load_state_dict (checkpoint.h's layout).
//      export_adamw refuses state it cannot match to a parameter rather than dropping it.
//   2. checkpoint.cpp: LibTorch's unpickler throws plain c10::Error (no subclass; typeid checked
//      on 1.13 and 2.6) for a pickle only Python writes, so the reason is told apart by its
//      words. 1.13 lacks the opcodes APPEND and SETITEM (a one-element list or dict): "Unknown
//      opcode ..." (AT_ERROR); 2.6 reads them. Both read an OrderedDict as None, and one given
//      items (a Python state_dict()) is "Expected GenericDict but got None"
//      (IValue::toGenericDict's TORCH_INTERNAL_ASSERT).
//   3. checkpoint.cpp: torch::jit::readArchiveAndTensors (import_read.h, exported) on an archive
//      checkpoint.cpp opened itself: what torch::jit::pickle_load does on one it opens, so that
//      the archive is read once.
#pragma once

namespace dl::model::libtorch_private {

// The LibTorch releases the three points above were checked on, as torch/version.h numbers them.
struct TorchRelease {
  int major;
  int minor;
};
constexpr TorchRelease kFirstChecked{1, 13};
constexpr TorchRelease kLastChecked{2, 11};
constexpr const char* kCheckedVersions = "LibTorch 1.13 to 2.11 (probed: 1.13, 2.6)";

constexpr bool checked(int major, int minor) {
  const int at = major * 1000 + minor;
  return at >= kFirstChecked.major * 1000 + kFirstChecked.minor &&
         at <= kLastChecked.major * 1000 + kLastChecked.minor;
}

// The unpickler's words for a pickle that only Python writes (point 2).
constexpr const char* kUnknownOpcode = "Unknown opcode";
constexpr const char* kOrderedDictAsNone = "Expected GenericDict but got None";

}  // namespace dl::model::libtorch_private
