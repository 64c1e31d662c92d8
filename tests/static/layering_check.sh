#!/usr/bin/env bash
# The layering of the source tree, checked on the text of every include (the build enforces the
# same through each target's include root; this says it in one line per breach):
#   core/      includes nothing of launcher/ or trainer/, and no LibTorch;
#   launcher/  includes nothing of trainer/, and no LibTorch;
#   trainer/   includes no launcher/ header; its data/ and report/ layers no LibTorch either, and
#              loader_module/ (the Python module over data/) neither LibTorch nor model/ or train/.
# Exit codes: 0 clean, 1 a breach (each printed as file:line: include).
#
#   tests/static/layering_check.sh [source root]
set -uo pipefail

root=${1:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}
cd "$root" || exit 66
torch='#include *[<"](torch|ATen|c10|caffe2)/'
status=0

# Prints the includes under $1 that match $2, with $3 as the reason.
forbid() {
  local hits
  hits=$(grep -rnE --include='*.h' --include='*.cpp' --include='*.c' "$2" "$1" 2>/dev/null)
  if [ -n "$hits" ]; then
    printf '%s\n' "$hits" | sed "s|\$|   <- $3|"
    status=1
  fi
}

forbid core '#include *"(launcher|data|model|train)/' "core/ includes launcher/ or trainer/"
forbid core "$torch" "LibTorch in core/"
forbid launcher '#include *"(data|model|train)/' "launcher/ includes trainer/"
forbid launcher "$torch" "LibTorch in launcher/"
forbid trainer '#include *"launcher/' "trainer/ includes launcher/"
forbid trainer/data "$torch" "LibTorch in trainer/data/"
forbid trainer/report "$torch" "LibTorch in trainer/report/"
forbid trainer/loader_module "$torch" "LibTorch in trainer/loader_module/"
forbid trainer/loader_module '#include *"(model|train)/' "trainer/loader_module/ includes model/ or train/"
# A header included without its folder would bypass the rules above.
forbid core '#include *"[a-z_]+\.h"' "include without its folder"
forbid launcher '#include *"[a-z_]+\.h"' "include without its folder"
forbid trainer '#include *"[a-z_]+\.h"' "include without its folder"

[ $status -eq 0 ] && echo "layering_check: core/, launcher/ and trainer/ keep their layers"
exit $status
