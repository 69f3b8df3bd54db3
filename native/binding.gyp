{
  "targets": [
    {
      "target_name": "txrelay_native",
      "sources": ["base58.c", "keccak.c", "shared.c", "ed25519.c", "ed25519_napi.c"],
      "defines": ["NAPI_VERSION=8"],
      "cflags_c": ["-std=c11", "-fvisibility=hidden", "-O3"],
      "conditions": [
        ["target_arch=='x64' and OS!='win'", { "cflags_c": ["-march=native"] }]
      ],
      "xcode_settings": {
        "OTHER_CFLAGS": ["-std=c11", "-fvisibility=hidden", "-O3"]
      }
    }
  ]
}
