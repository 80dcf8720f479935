//go:build linux && arm64

package sandbox

// The arm64 numbers, and the 32-bit ARM ones a 32-bit program uses on the
// same kernel.
var sigArches = []sigCalls{
	{arch: 0xC00000B7, kill: 129, tkill: 130, tgkill: 131, sigqueue: 138, tgsigqueue: 240, pidfdSend: 424, fcntl: []uint32{25},
		socket: 198, bind: 200, connect: 203, listen: 201, sendto: 206, sendmsg: 211, sendmmsg: 269},
	{arch: 0x40000028, kill: 37, tkill: 238, tgkill: 268, sigqueue: 178, tgsigqueue: 363, pidfdSend: 424, fcntl: []uint32{55, 221},
		socket: 281, bind: 282, connect: 283, listen: 284, sendto: 290, sendmsg: 296, sendmmsg: 374},
}
