// Package libnbd stands in for libnbd's Go bindings in our build of KubeVirt's virt-launcher
// (hack/build-kubevirt.sh): the Go module proxy refuses libguestfs.org/libnbd (403), and the only
// user in virt-launcher is its NBD client for changed-block backups of disks
// (pkg/virt-launcher/virtwrap/storage/nbd_client.go), which an Oberon machine never has. Every
// call fails with ErrNotBuilt, so a backup asked of our launcher fails loudly instead of
// pretending. Only the names that client uses are here.
package libnbd

import "errors"

// ErrNotBuilt is what every operation returns.
var ErrNotBuilt = errors.New("libnbd is not built into this virt-launcher (retrokube's RISC5 launcher has no NBD backup support)")

const (
	CONTEXT_BASE_ALLOCATION   = "base:allocation"
	CONTEXT_QEMU_DIRTY_BITMAP = "qemu:dirty-bitmap:"
	STATE_HOLE                = 1
	STATE_ZERO                = 2
	STATE_DIRTY               = 1
)

type LibnbdExtent struct {
	Length uint64
	Flags  uint64
}

type Libnbd struct{}

type ExtentCallback64 func(metacontext string, offset uint64, entries []LibnbdExtent, err *int) int

type BlockStatus64Optargs struct{}
type PreadOptargs struct{}

func Create() (*Libnbd, error)                            { return nil, ErrNotBuilt }
func (*Libnbd) Close() error                              { return nil }
func (*Libnbd) AddMetaContext(string) error               { return ErrNotBuilt }
func (*Libnbd) CanMetaContext(string) (bool, error)       { return false, ErrNotBuilt }
func (*Libnbd) GetSize() (uint64, error)                  { return 0, ErrNotBuilt }
func (*Libnbd) SetExportName(string) error                { return ErrNotBuilt }
func (*Libnbd) ConnectUnix(string) error                  { return ErrNotBuilt }
func (*Libnbd) Pread([]byte, uint64, *PreadOptargs) error { return ErrNotBuilt }
func (*Libnbd) BlockStatus64(uint64, uint64, ExtentCallback64, *BlockStatus64Optargs) error {
	return ErrNotBuilt
}
