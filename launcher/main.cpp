// dl-launch: probe the machine, plan the run, start and supervise the training program.
#include "launcher/app.h"

int main(int argc, char** argv) {
  return dl::launcher_main(argc, argv);
}
