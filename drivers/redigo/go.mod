module github.com/scriptlock/scriptlock/drivers/redigo

go 1.26.0

require (
	github.com/gomodule/redigo v1.9.3
	github.com/mna/redisc v1.4.0
	github.com/scriptlock/scriptlock v0.0.0-00010101000000-000000000000
)

require (
	github.com/stretchr/testify v1.12.1
	go.yaml.in/yaml/v3 v3.0.5 // indirect
)

replace github.com/scriptlock/scriptlock => ../..
