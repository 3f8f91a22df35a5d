// Package sql92 compiles and evaluates RocketMQ's SQL92 message selectors (expressionType
// SQL92), giving the results RocketMQ 4.9's filter module and broker give, quirks included, so
// a subscription selects the same messages here as on a RocketMQ broker.
//
// The grammar is SelectorParser.jj's: NOT, AND, OR, BETWEEN, IN, IS, TRUE, FALSE and NULL in any
// case; property names of ASCII letters, digits, _ and $ (no dots); strings in single quotes, a
// quote inside doubled; integer literals (an optional l/L suffix) and decimal literals with an
// optional exponent; = <> > >= < <=, [NOT] BETWEEN x AND y, [NOT] IN ('s', ...), IS [NOT] NULL,
// unary + and -, parentheses; /* */ comments and -- comments ended by a line break. NOT binds
// tightest, so "NOT a = 1" is "(NOT a) = 1"; then comparisons, =, AND, OR.
//
// Evaluation is three-valued, as RocketMQ's expression classes: a missing property makes a
// comparison unknown, AND is false if any side is false, OR true if any side is true, NOT
// keeps unknown unknown, and only a true result matches. Properties are strings; a literal's
// type decides how a property compared with it parses (int32 for an integer literal that fits,
// int64 for a larger one, a Java double for a decimal one), and a property that does not parse,
// like any exception in RocketMQ's evaluation, makes the whole message not match. Two
// properties compare with < and > as numbers only; = and IN compare strings exactly.
//
// Compile bounds its input (MaxExpressionBytes, MaxDepth) and parses numeric literals once;
// Match allocates nothing, parsing a property's number in place.
package sql92
