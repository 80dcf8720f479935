//go:build linux && arm

package sandbox

// The 32-bit ARM (EABI) numbers: Raspberry Pi OS.
var sigArches = []sigCalls{
	{arch: 0x40000028, kill: 37, tkill: 238, tgkill: 268, sigqueue: 178, tgsigqueue: 363, pidfdSend: 424, fcntl: []uint32{55, 221},
		socket: 281, bind: 282, connect: 283, listen: 284, sendto: 290, sendmsg: 296, sendmmsg: 374},
}
