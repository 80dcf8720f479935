//go:build linux

package kernelsim

const (
	arch                     = 0xC000003E // AUDIT_ARCH_X86_64
	sysClone                 = 56
	sysUnshare               = 272
	sysClone3                = 435
	sysLandlockCreateRuleset = 444
	sysLandlockAddRule       = 445
	sysLandlockRestrictSelf  = 446
)
