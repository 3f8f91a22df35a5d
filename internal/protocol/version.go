package protocol

import "fmt"

// VersionDesc names a remoting version number as RocketMQ's MQVersion.getVersionDesc does
// (399 is "V4_9_3"): what mqadmin prints for a client's or broker's version.
func VersionDesc(v int) string {
	if v < 0 {
		return versionNames[0]
	}
	if v >= len(versionNames) {
		return versionNames[len(versionNames)-1]
	}
	return versionNames[v]
}

// VersionNames is how many names MQVersion.Version has (RocketMQ 4.9.x's: 613).
func VersionNames() int { return len(versionNames) }

// versionNames are RocketMQ's MQVersion.Version constants in ordinal order: the irregular
// 3.x series, then a SNAPSHOT and a release of every 4.x.y and 5.x.y.
var versionNames = func() []string {
	v := []string{"V3_0_0_SNAPSHOT", "V3_0_0_ALPHA1"}
	for i := 1; i <= 9; i++ {
		if i >= 6 {
			v = append(v, fmt.Sprintf("V3_0_0_BETA%d_SNAPSHOT", i))
		}
		v = append(v, fmt.Sprintf("V3_0_0_BETA%d", i))
	}
	v = append(v, "V3_0_0_FINAL")
	pair := func(major, minor, patch int) {
		v = append(v, fmt.Sprintf("V%d_%d_%d_SNAPSHOT", major, minor, patch), fmt.Sprintf("V%d_%d_%d", major, minor, patch))
	}
	for p := 1; p <= 15; p++ {
		pair(3, 0, p)
	}
	for minor := 1; minor <= 9; minor++ {
		first := 1
		if minor <= 2 {
			first = 0
		}
		for p := first; p <= 9; p++ {
			pair(3, minor, p)
		}
	}
	for major := 4; major <= 5; major++ {
		for minor := 0; minor <= 9; minor++ {
			for p := 0; p <= 9; p++ {
				pair(major, minor, p)
			}
		}
	}
	return append(v, "HIGHER_VERSION")
}()
