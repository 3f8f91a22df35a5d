package names

import "strings"

// NamespaceSeparator joins a namespace and a name on the wire: "ns%name"
// (NamespaceUtil.NAMESPACE_SEPARATOR).
const NamespaceSeparator = "%"

// benchmarkTopic is TopicValidator.RMQ_SYS_BENCHMARK_TOPIC, a system topic without the prefix.
const benchmarkTopic = "BenchmarkTest"

// sysGroupPrefix starts the groups RocketMQ keeps for itself (MixAll.CID_RMQ_SYS_PREFIX).
const sysGroupPrefix = "CID_RMQ_SYS_"

// WrapNamespace is name as brokers know it for a client with namespace ns (RocketMQ
// ClientConfig.namespace, NamespaceUtil.wrapNamespace): "ns%name", with a retry or dead-letter
// prefix kept in front ("%RETRY%ns%group"). System topics and groups, names already in ns and
// any name when ns is "" come back unchanged, so wrapping twice is wrapping once.
func WrapNamespace(ns, name string) string {
	if ns == "" || name == "" || isSystemResource(name) || HasNamespace(ns, name) {
		return name
	}
	prefix, bare := splitRetryDLQ(name)
	return prefix + ns + NamespaceSeparator + bare
}

// WithoutNamespace undoes WrapNamespace: a name in ns loses it ("%RETRY%ns%group" becomes
// "%RETRY%group"); any other name comes back unchanged.
func WithoutNamespace(ns, name string) string {
	if !HasNamespace(ns, name) {
		return name
	}
	prefix, bare := splitRetryDLQ(name)
	return prefix + bare[len(ns)+len(NamespaceSeparator):]
}

// HasNamespace reports whether name, past a retry or dead-letter prefix, starts with "ns%"
// (NamespaceUtil.isAlreadyWithNamespace).
func HasNamespace(ns, name string) bool {
	if ns == "" || name == "" || isSystemResource(name) {
		return false
	}
	_, bare := splitRetryDLQ(name)
	return strings.HasPrefix(bare, ns) && strings.HasPrefix(bare[len(ns):], NamespaceSeparator)
}

// splitRetryDLQ splits a retry or dead-letter prefix off name.
func splitRetryDLQ(name string) (prefix, bare string) {
	switch {
	case strings.HasPrefix(name, RetryPrefix):
		return RetryPrefix, name[len(RetryPrefix):]
	case strings.HasPrefix(name, DLQPrefix):
		return DLQPrefix, name[len(DLQPrefix):]
	}
	return "", name
}

// isSystemResource reports the topics and groups a namespace never applies to
// (NamespaceUtil.isSystemResource).
func isSystemResource(name string) bool {
	return Reserved(name) || name == benchmarkTopic || strings.HasPrefix(name, sysGroupPrefix)
}
