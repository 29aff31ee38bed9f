fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let text = std::fs::read_to_string(&args[0]).unwrap();
    let base = std::path::Path::new(&args[0]).parent();
    let out = pisanet::run_toml(&text, base, &args[1..], &mut |_| true).unwrap();
    let f = &out.flows;
    for i in 0..f.id.len() {
        if f.fct_us[i].is_nan() {
            println!("unfinished flow {} {}->{} bytes {} start {} retx {}", f.id[i], f.src[i], f.dst[i], f.bytes[i], f.start_us[i], f.retransmissions[i]);
        }
    }
    if let serde_json::Value::Array(ports) = &out.ports {
        for p in ports {
            if p["switch_port"].as_bool() == Some(true) {
                println!("{} tx {} drops {}", p["name"], p["tx_bytes"], p["drops"]);
            }
        }
    }
}
