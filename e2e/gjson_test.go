package e2e

import "github.com/tidwall/gjson"

type gjsonResult = gjson.Result

func gjsonGet(s, path string) gjson.Result { return gjson.Get(s, path) }
