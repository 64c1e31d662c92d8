// dl-train as a function: argv in, exit code out. main() only calls this.
#pragma once

namespace dl::train {

int train_main(int argc, const char* const argv[]);

}  // namespace dl::train
