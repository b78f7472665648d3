// etcd: the node's datastore. kine's in-memory backend (the envtest datastore) stopped with
// "WATCH SEND EVENTS FOR PAST REVISION" under a real node's load, and kine's SQLite backend needs
// cgo; etcd is what clusters run. This is etcd's own entry point (etcdmain), built in our module
// because etcd's main module has replace directives and cannot be `go install`ed.
package main

import (
	"os"

	"go.etcd.io/etcd/server/v3/etcdmain"
)

func main() {
	etcdmain.Main(os.Args)
}
