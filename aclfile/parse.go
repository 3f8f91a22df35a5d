package aclfile

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"

	"github.com/mqgo/mq/acl"
	"go.yaml.in/yaml/v3"
)

// maxYAMLNodes bounds the nodes Parse visits, aliases followed: a few lines of anchors and
// aliases can otherwise name billions of perms.
const maxYAMLNodes = 1 << 20

// Parse reads plain_acl.yml content. Scalars are taken as written, so an unquoted
// "secretKey: 12345678" is the string "12345678"; keys RocketMQ does not read (dataVersion
// among them) are ignored. Errors give the line and the field, never a value: a misplaced
// secret must not reach a log.
func Parse(data []byte) (*acl.Config, error) {
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return nil, fmt.Errorf("acl: %w", err)
	}
	p := &yamlWalker{}
	cfg := &acl.Config{}
	root := &doc
	if root.Kind == 0 { // no document at all: an empty file, or comments only
		return cfg, nil
	}
	if root.Kind == yaml.DocumentNode {
		if len(root.Content) == 0 {
			return cfg, nil
		}
		root = root.Content[0]
	}
	root, err := p.deref(root)
	if err != nil {
		return nil, err
	}
	if isNull(root) {
		return cfg, nil
	}
	if root.Kind != yaml.MappingNode {
		return nil, fieldError(root, "", "the document must be a mapping")
	}
	err = p.eachPair(root, func(key string, v *yaml.Node) error {
		switch key {
		case "globalWhiteRemoteAddresses":
			return p.strings(v, key, &cfg.GlobalWhiteRemoteAddresses)
		case "accounts":
			return p.accounts(v, &cfg.Accounts)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return cfg, nil
}

// Load reads and parses the plain_acl.yml at path.
func Load(path string) (*acl.Config, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("acl: %w", err)
	}
	return Parse(data)
}

// maxMergeDepth bounds merge keys within merged mappings, which aliases could make cyclic.
const maxMergeDepth = 16

// yamlWalker turns the node tree into a Config, counting the nodes it visits.
type yamlWalker struct {
	visited    int
	mergeDepth int
}

var errTooManyNodes = errors.New("acl: the document expands to too many nodes (aliases?)")

// deref follows aliases and counts n against maxYAMLNodes.
func (p *yamlWalker) deref(n *yaml.Node) (*yaml.Node, error) {
	for hops := 0; n.Kind == yaml.AliasNode; hops++ {
		if n.Alias == nil || hops > 64 {
			return nil, fieldError(n, "", "unresolved alias")
		}
		n = n.Alias
	}
	p.visited++
	if p.visited > maxYAMLNodes {
		return nil, errTooManyNodes
	}
	return n, nil
}

// eachPair calls f for each key of mapping m, the pairs merged in by "<<" first, so that the
// mapping's own keys override them as YAML's merge key says.
func (p *yamlWalker) eachPair(m *yaml.Node, f func(key string, v *yaml.Node) error) error {
	for i := 0; i+1 < len(m.Content); i += 2 {
		k, err := p.deref(m.Content[i])
		if err != nil {
			return err
		}
		if k.Kind != yaml.ScalarNode || k.Value != "<<" || k.ShortTag() != "!!merge" {
			continue
		}
		if err := p.merge(m.Content[i+1], f); err != nil {
			return err
		}
	}
	for i := 0; i+1 < len(m.Content); i += 2 {
		k, err := p.deref(m.Content[i])
		if err != nil {
			return err
		}
		if k.Kind != yaml.ScalarNode || k.ShortTag() == "!!merge" {
			continue
		}
		v, err := p.deref(m.Content[i+1])
		if err != nil {
			return err
		}
		if err := f(k.Value, v); err != nil {
			return err
		}
	}
	return nil
}

// merge applies a merge key's value: one mapping or a sequence of mappings, earlier ones
// taking precedence.
func (p *yamlWalker) merge(v *yaml.Node, f func(key string, v *yaml.Node) error) error {
	v, err := p.deref(v)
	if err != nil {
		return err
	}
	if p.mergeDepth >= maxMergeDepth {
		return fieldError(v, "<<", "merge keys nested too deep")
	}
	p.mergeDepth++
	defer func() { p.mergeDepth-- }()
	switch v.Kind {
	case yaml.MappingNode:
		return p.eachPair(v, f)
	case yaml.SequenceNode:
		for i := len(v.Content) - 1; i >= 0; i-- {
			m, err := p.deref(v.Content[i])
			if err != nil {
				return err
			}
			if m.Kind != yaml.MappingNode {
				return fieldError(m, "<<", "a merge key takes mappings")
			}
			if err := p.eachPair(m, f); err != nil {
				return err
			}
		}
		return nil
	}
	return fieldError(v, "<<", "a merge key takes mappings")
}

func (p *yamlWalker) accounts(v *yaml.Node, out *[]acl.Account) error {
	if isNull(v) {
		*out = nil
		return nil
	}
	if v.Kind != yaml.SequenceNode {
		return fieldError(v, "accounts", "want a list of accounts")
	}
	accounts := make([]acl.Account, 0, len(v.Content))
	for i, item := range v.Content {
		item, err := p.deref(item)
		if err != nil {
			return err
		}
		field := "accounts[" + strconv.Itoa(i) + "]"
		if item.Kind != yaml.MappingNode {
			return fieldError(item, field, "want a mapping")
		}
		var a acl.Account
		err = p.eachPair(item, func(key string, v *yaml.Node) error {
			name := field + "." + key
			switch key {
			case "accessKey":
				return scalar(v, name, &a.AccessKey)
			case "secretKey":
				return scalar(v, name, &a.SecretKey)
			case "whiteRemoteAddress":
				return scalar(v, name, &a.WhiteRemoteAddress)
			case "admin":
				return boolean(v, name, &a.Admin)
			case "defaultTopicPerm":
				return scalar(v, name, &a.DefaultTopicPerm)
			case "defaultGroupPerm":
				return scalar(v, name, &a.DefaultGroupPerm)
			case "topicPerms":
				return p.strings(v, name, &a.TopicPerms)
			case "groupPerms":
				return p.strings(v, name, &a.GroupPerms)
			}
			return nil
		})
		if err != nil {
			return err
		}
		accounts = append(accounts, a)
	}
	*out = accounts
	return nil
}

// strings reads a list of scalars; null is the empty list.
func (p *yamlWalker) strings(v *yaml.Node, field string, out *[]string) error {
	if isNull(v) {
		*out = nil
		return nil
	}
	if v.Kind != yaml.SequenceNode {
		return fieldError(v, field, "want a list")
	}
	list := make([]string, 0, len(v.Content))
	for i, item := range v.Content {
		item, err := p.deref(item)
		if err != nil {
			return err
		}
		var s string
		if err := scalar(item, field+"["+strconv.Itoa(i)+"]", &s); err != nil {
			return err
		}
		list = append(list, s)
	}
	*out = list
	return nil
}

// scalar reads any scalar as the text it was written as; null is "".
func scalar(v *yaml.Node, field string, out *string) error {
	if v.Kind != yaml.ScalarNode {
		return fieldError(v, field, "want a single value")
	}
	if isNull(v) {
		*out = ""
		return nil
	}
	*out = v.Value
	return nil
}

// boolean reads true or false, and the YAML 1.1 spellings RocketMQ's parser (SnakeYAML) also
// takes (yes/no, on/off), quoted or not; null is false.
func boolean(v *yaml.Node, field string, out *bool) error {
	var s string
	if err := scalar(v, field, &s); err != nil {
		return err
	}
	switch strings.ToLower(s) {
	case "true", "yes", "on", "y":
		*out = true
	case "false", "no", "off", "n", "":
		*out = false
	default:
		return fieldError(v, field, "want true or false")
	}
	return nil
}

func isNull(v *yaml.Node) bool {
	return v.Kind == yaml.ScalarNode && v.ShortTag() == "!!null"
}

// fieldError names where the problem is, never the value found there.
func fieldError(v *yaml.Node, field, msg string) error {
	if field == "" {
		return fmt.Errorf("acl: line %d: %s", v.Line, msg)
	}
	return fmt.Errorf("acl: line %d: %s: %s", v.Line, field, msg)
}
