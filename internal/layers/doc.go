// Package layers holds no code: its test checks the module's import graph
// against the layer list and the AWS SDK allow-list written in it.
package layers
