// dl-train: the LibTorch trainer.
#include "train/run/app.h"

int main(int argc, char** argv) {
  return dl::train::train_main(argc, argv);
}
