package route

// Permission bits of a topic's queues (QueueData.Perm, TopicConfig.Perm); part of the wire format.
const (
	PermPriority int32 = 1 << 3 // 8
	PermRead     int32 = 1 << 2 // 4
	PermWrite    int32 = 1 << 1 // 2
	PermInherit  int32 = 1 << 0 // 1: the topic is a template for auto-created topics (TBW102)
)

// PermReadWrite is the usual permission of a topic (6).
const PermReadWrite = PermRead | PermWrite

// IsReadable reports whether perm lets consumers read.
func IsReadable(perm int32) bool { return perm&PermRead != 0 }

// IsWritable reports whether perm lets producers write.
func IsWritable(perm int32) bool { return perm&PermWrite != 0 }

// IsInherited reports whether perm carries the inherit bit.
func IsInherited(perm int32) bool { return perm&PermInherit != 0 }

// PermString renders perm like RocketMQ's PermName.perm2String ("RW-", "R--", "-WX", ...).
func PermString(perm int32) string {
	s := []byte("---")
	if IsReadable(perm) {
		s[0] = 'R'
	}
	if IsWritable(perm) {
		s[1] = 'W'
	}
	if IsInherited(perm) {
		s[2] = 'X'
	}
	return string(s)
}
