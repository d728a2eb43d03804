module github.com/tierlog/tierlog

go 1.26.8
