{
  "targets": [
    {
      "target_name": "txrelay_native",
      "sources": ["base58.c", "keccak.c", "shared.c"],
      "defines": ["NAPI_VERSION=8"],
      "cflags_c": ["-std=c11", "-fvisibility=hidden"],
      "xcode_settings": {
        "OTHER_CFLAGS": ["-std=c11", "-fvisibility=hidden"]
      }
    }
  ]
}
