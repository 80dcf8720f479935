#!/bin/sh
# Loads Harvey's AppArmor profile, which lets its sandbox make user
# namespaces where Ubuntu 23.10+ refuses them to programs without one (it
# changes nothing else: flags=(unconfined)). As Debian's dh_apparmor does:
# only where AppArmor is active, and never failing the install.
set -e
profile=/etc/apparmor.d/harvey
if [ -f "$profile" ] && command -v apparmor_parser >/dev/null 2>&1; then
  if command -v aa-enabled >/dev/null 2>&1; then
    aa-enabled --quiet 2>/dev/null || exit 0
  elif [ "$(cat /sys/module/apparmor/parameters/enabled 2>/dev/null)" != Y ]; then
    exit 0
  fi
  apparmor_parser -r -T -W "$profile" || true
fi
exit 0
