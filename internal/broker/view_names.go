package broker

// Names lists the topics the broker holds, sorted: metrics report each topic's counters from
// its creation, at 0 until its first message, so that a rate over them counts the first one.
func (v Topics) Names() []string { return v.b.topics.Names() }
