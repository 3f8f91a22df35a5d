package node

import (
	"crypto/tls"
	"reflect"
	"testing"
	"time"

	"github.com/mqgo/mq/config"
)

// nodeOnlyFields are the settings the node uses itself (listeners, roles of the process,
// start-up) instead of handing them to a part, and those whose effect the zero-versus-set
// comparison below cannot see (the broker address is derived from the bound listener). Names
// are paths in config.Options.
var nodeOnlyFields = map[string]bool{
	"Listen": true, "NameServerListen": true, "BrokerListen": true, "DisableNameServer": true,
	"DisableBroker": true, "HTTP.Listen": true, "NameServers": true, "StartTimeout": true, "Limits.ServerWorkerThreads": true,
	"Limits.ServerQueueCapacity": true, "Broker.IP": true, "Logger": true,
	// Controller mode's periods and priority drive the replicas manager (internal/broker/ha/replicas.go).
	"ControllerMode.HeartbeatInterval": true, "ControllerMode.SyncBrokerMetadataPeriod": true,
	"ControllerMode.CheckSyncStateSetPeriod": true, "ControllerMode.HAMaxTimeSlaveNotCatchup": true,
	"ControllerMode.ElectionPriority": true,
	// ACL guards every listener's dispatcher, and the broker's own transport signs and dials
	// TLS (node.go): no part sees them.
	"Security.ACL": true, "Security.ACLFile": true, "Security.ACLWatchInterval": true, "Security.Credentials": true,
	"Security.TLSClientEnable": true, "Security.TLSClientConfig": true,
	// The optional parts' implementations: the node starts them itself (controller.go, http.go),
	// and embed_test.go and the controller tests check that they run.
	"Controller.Impl": true, "HTTP.Metrics": true, "GRPC.Service": true,
}

// leafFields lists the settings of config.Options, groups entered, by path and index.
func leafFields(t reflect.Type, prefix string, index []int) (paths []string, indexes [][]int) {
	for i := range t.NumField() {
		f := t.Field(i)
		idx := append(append([]int(nil), index...), i)
		if f.Type.Kind() == reflect.Struct && f.Type.PkgPath() == reflect.TypeFor[config.Options]().PkgPath() {
			p, x := leafFields(f.Type, prefix+f.Name+".", idx)
			paths, indexes = append(paths, p...), append(indexes, x...)
			continue
		}
		paths, indexes = append(paths, prefix+f.Name), append(indexes, idx)
	}
	return paths, indexes
}

// Every node setting reaches a part: setting any one field changes what parts.go derives. A
// field added to config.Options and forgotten in parts.go fails here, not in a user's
// deployment.
func TestEveryOptionReachesAPart(t *testing.T) {
	derive := func(o Options) []any {
		bo, err := o.brokerOptions("127.0.0.1:10911", nil, nil)
		if err != nil {
			t.Fatalf("brokerOptions: %v", err)
		}
		co := o.controllerOptions("127.0.0.1:9876")
		co.Logger = nil
		return []any{o.nameServerOptions(), o.serverOptions("127.0.0.1:9876"), bo, co, o.httpOptions(), o.grpcOptions()}
	}
	base := derive(Options{Options: config.Options{Listen: "127.0.0.1:9876"}})
	paths, indexes := leafFields(reflect.TypeFor[config.Options](), "", nil)
	if len(paths) < 80 {
		t.Fatalf("found %d settings: the walk misses the groups", len(paths))
	}
	for n, name := range paths {
		if nodeOnlyFields[name] {
			continue
		}
		o := Options{Options: config.Options{Listen: "127.0.0.1:9876"}}
		v := reflect.ValueOf(&o.Options).Elem().FieldByIndex(indexes[n])
		switch v.Kind() {
		case reflect.String:
			v.SetString("127.0.0.1:1")
			if name == "Store.FlushDiskType" {
				v.SetString("SYNC_FLUSH")
			}
			if name == "Broker.Role" {
				v.SetString("SYNC_MASTER")
			}
		case reflect.Bool:
			v.SetBool(true)
		case reflect.Int, reflect.Int32, reflect.Int64:
			if v.Type() == reflect.TypeOf(time.Duration(0)) {
				v.SetInt(int64(7 * time.Millisecond))
			} else {
				v.SetInt(7)
			}
		case reflect.Slice:
			if v.Type().Elem().Kind() == reflect.String {
				v.Set(reflect.ValueOf([]string{"127.0.0.1:1"}))
			} else {
				v.Set(reflect.ValueOf([]time.Duration{time.Second}))
			}
		case reflect.Map:
			v.Set(reflect.ValueOf(map[string]string{"n0": "127.0.0.1:1"}))
		case reflect.Pointer:
			if v.Type() != reflect.TypeOf((*tls.Config)(nil)) {
				t.Fatalf("field %s of type %v: teach this test how to set it", name, v.Type())
			}
			v.Set(reflect.ValueOf(&tls.Config{ServerName: "x"}))
		default:
			t.Fatalf("field %s of kind %v: teach this test how to set it", name, v.Kind())
		}
		if reflect.DeepEqual(base, derive(o)) {
			t.Errorf("Options.%s reaches no part: parts.go drops it", name)
		}
	}
}
