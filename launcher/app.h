// dl-launch as a function: argv in, exit code out. main() only calls this.
#pragma once

namespace dl {

int launcher_main(int argc, const char* const argv[]);

}  // namespace dl
