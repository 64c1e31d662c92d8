#!/bin/bash
# Checks a deploy file with a validator that is not ours:
#   cloud-init   deploy/cloud-init.yaml: `cloud-init schema` (Debian's cloud-init), equal to what
#                deploy/vm/render-user-data.sh makes from deploy/vm/, within AWS's 16 KB of user data
#   units        deploy/vm/*.service: `systemd-analyze verify` in a root laid out by
#                deploy/vm/install.sh --root (its only stand-ins: /usr/bin/docker and docker.service,
#                which the cloud GPU images carry); any message fails
#   scripts      shellcheck on the deploy scripts: deploy/vm/, tests/deploy/, the env/ scripts the
#                workflows run (env/ci-*.sh, env/image-*.sh, env/lock.sh) and env/install-native.sh
#   packer       deploy/packer/dl-tools.pkr.hcl: `packer validate` (Debian's Packer 1.6, whose AWS
#                builder is built in: no plugin download, no credentials needed to validate)
#   workflows    .github/workflows/*.yml: action-validator (npm @action-validator/cli), and every
#                run: step calls a script in env/ that exists
#
#   tests/deploy/validate.sh KIND [REPO]
#
# Exit codes: 0 valid, 1 not, 64 unknown KIND, 77 skipped (the validator is not installed).
set -euo pipefail

kind=${1:-}
root=${2:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}
fail() { echo "validate.sh $kind: $*" >&2; exit 1; }
need() { command -v "$1" >/dev/null || { echo "SKIPPED: $1 not installed (env/install-native.sh installs it)"; exit 77; }; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

case "$kind" in
  cloud-init)
    need cloud-init
    user_data=$root/deploy/cloud-init.yaml
    cloud-init schema --config-file "$user_data" || fail "cloud-init schema rejects $user_data"
    bash "$root/deploy/vm/render-user-data.sh" >"$work/rendered.yaml"
    diff -u "$user_data" "$work/rendered.yaml" >"$work/diff" ||
      fail "$user_data differs from deploy/vm/render-user-data.sh's output (regenerate it): $(head -n 20 "$work/diff")"
    size=$(wc -c <"$user_data")
    [ "$size" -le 16384 ] || fail "$user_data is $size bytes; AWS takes at most 16384"
    head -n 1 "$user_data" | grep -qx '#cloud-config' || fail "$user_data must start with #cloud-config"
    echo "validate.sh cloud-init: $user_data is valid cloud-config, generated from deploy/vm/, $size bytes"
    ;;
  units)
    need systemd-analyze
    vroot=$work/root
    mkdir -p "$vroot/usr/lib/systemd" "$vroot/usr/bin"
    # The distribution's own units (targets, sockets) that ours are checked against.
    cp -r /lib/systemd/system "$vroot/usr/lib/systemd/"
    printf '#!/bin/sh\n' >"$vroot/usr/bin/docker"
    chmod 0755 "$vroot/usr/bin/docker"
    printf '[Unit]\nDescription=Docker (stand-in)\n[Service]\nExecStart=/usr/bin/docker\n' >"$vroot/usr/lib/systemd/system/docker.service"
    bash "$root/deploy/vm/install.sh" --root "$vroot" --image registry.example/dl-tools:test >/dev/null 2>&1 ||
      fail "deploy/vm/install.sh --root failed"
    [ -L "$vroot/etc/systemd/system/multi-user.target.wants/dl-train.service" ] || fail "install.sh did not enable dl-train.service"
    out=$(systemd-analyze verify --root="$vroot" /etc/systemd/system/dl-prepare.service /etc/systemd/system/dl-train.service 2>&1) ||
      fail "systemd-analyze verify failed: $out"
    [ -z "$out" ] || fail "systemd-analyze verify has messages: $out"
    echo "validate.sh units: systemd-analyze verify: dl-prepare.service and dl-train.service, installed and enabled by install.sh, no messages"
    ;;
  scripts)
    need shellcheck
    mapfile -t scripts < <(cd "$root" && { ls deploy/vm/*.sh tests/deploy/*.sh env/ci-*.sh env/image-*.sh env/lock.sh env/install-native.sh; } 2>/dev/null)
    [ "${#scripts[@]}" -gt 0 ] || fail "no scripts found"
    (cd "$root" && shellcheck -x -P SCRIPTDIR "${scripts[@]}") || fail "shellcheck found problems"
    echo "validate.sh scripts: shellcheck: ${#scripts[@]} scripts clean"
    ;;
  packer)
    need packer
    template=$root/deploy/packer/dl-tools.pkr.hcl
    (cd "$work" && packer validate -var image=registry.example/dl-tools:test "$template") || fail "packer validate rejects $template"
    # A template that is wrong must fail here, or the check proves nothing.
    sed 's/^  instance_type = var.instance_type/  instance_typo = var.instance_type/' "$template" >"$work/broken.pkr.hcl"
    if (cd "$work" && packer validate -var image=x broken.pkr.hcl) >/dev/null 2>&1; then
      fail "packer validate accepts a template with an unknown argument: the check is blind"
    fi
    echo "validate.sh packer: $(packer version | head -n 1) validates $template (and rejects a broken copy)"
    ;;
  workflows)
    validator=$(command -v action-validator || true)
    [ -n "$validator" ] || { echo "SKIPPED: action-validator not installed (env/install-native.sh installs @action-validator/cli from npm)"; exit 77; }
    shopt -s nullglob
    workflows=("$root"/.github/workflows/*.yml)
    [ "${#workflows[@]}" -gt 0 ] || fail "no workflows in .github/workflows"
    for wf in "${workflows[@]}"; do
      "$validator" "$wf" || fail "action-validator rejects $wf"
      # Each run: step is one line calling a script of env/ (so the tests run the same commands).
      while IFS= read -r line; do
        script=$(sed -E 's/^ *(- )?run: *(bash )?//' <<<"$line" | cut -d' ' -f1)
        [[ "$script" == env/*.sh ]] || fail "$wf: '$line': a run: step must call a script in env/"
        [ -f "$root/$script" ] || fail "$wf: $script does not exist"
      done < <(grep -E '^ *(- )?run: ' "$wf")
      grep -qE '^ *(- )?run: *[|>]' "$wf" && fail "$wf: a multi-line run: step (keep commands in env/ scripts)"
    done
    # The validator must reject a broken workflow, or the check proves nothing.
    printf 'name: broken\non: push\njobs:\n  x:\n    runs-on: ubuntu-latest\n    step:\n      - run: env/test.sh\n' >"$work/broken.yml"
    if "$validator" "$work/broken.yml" >/dev/null 2>&1; then
      fail "action-validator accepts a workflow with 'step:' for 'steps:': the check is blind"
    fi
    version=$(npm ls -g --depth=0 @action-validator/cli 2>/dev/null | grep -o 'cli@[0-9.]*' || echo "action-validator")
    echo "validate.sh workflows: @action-validator/$version accepts ${#workflows[@]} workflows (and rejects a broken one)"
    ;;
  *)
    echo "validate.sh: unknown kind '$kind' (expected cloud-init, units, scripts, packer or workflows)" >&2
    exit 64
    ;;
esac
