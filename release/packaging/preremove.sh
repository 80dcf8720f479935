#!/bin/sh
# Unloads Harvey's AppArmor profile before the package (and the profile
# file) goes; only where AppArmor is active, never failing the removal.
profile=/etc/apparmor.d/harvey
if [ -f "$profile" ] && command -v apparmor_parser >/dev/null 2>&1; then
  if command -v aa-enabled >/dev/null 2>&1; then
    aa-enabled --quiet 2>/dev/null || exit 0
  elif [ "$(cat /sys/module/apparmor/parameters/enabled 2>/dev/null)" != Y ]; then
    exit 0
  fi
  apparmor_parser -R "$profile" 2>/dev/null || true
fi
exit 0
