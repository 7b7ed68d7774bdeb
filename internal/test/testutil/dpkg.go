package testutil

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
