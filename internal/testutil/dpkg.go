package testutil

import "fmt"

// DpkgStatus is a throwaway dpkg database: the node's real dpkg-query reads it, never the
// machine's own.
const DpkgStatus = `Package: bash
Status: install ok installed
Version: 5.2.15-2+b2
Architecture: amd64
Maintainer: test
Description: test

Package: jq
Status: install ok installed
Version: 1.5+dfsg-1
Architecture: amd64
Maintainer: test
Description: test

Package: vim
Status: deinstall ok config-files
Version: 2:9.0.1378-2
Architecture: amd64
Maintainer: test
Description: test

`

// fakeInstaller stands in for apt-get's install on the throwaway database: like apt, it
// installs all or nothing, and it cannot find "broken-pkg".
const fakeInstaller = `#!/bin/sh
status=%q
for arg in "$@"; do
  if [ "${arg%%%%=*}" = broken-pkg ]; then echo "E: Unable to locate package broken-pkg" >&2; exit 100; fi
done
for arg in "$@"; do
  name=${arg%%%%=*}; ver=${arg#*=}; [ "$name" = "$arg" ] && ver=1.0-1
  awk -v p="$name" 'BEGIN{RS="";ORS="\n\n"} $0 !~ ("^Package: " p "\n") {print}' "$status" > "$status.new"
  printf 'Package: %%s\nStatus: install ok installed\nVersion: %%s\nArchitecture: amd64\nMaintainer: test\nDescription: test\n\n' "$name" "$ver" >> "$status.new"
  mv "$status.new" "$status"
  echo "$arg" >> %q
done
`

// FakeInstaller is the script of fakeInstaller for the database at status, appending each
// package word it installs to the file log.
func FakeInstaller(status, log string) string { return fmt.Sprintf(fakeInstaller, status, log) }
