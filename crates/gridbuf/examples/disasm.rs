fn main() {
    let text = std::fs::read_to_string(std::env::args().nth(1).unwrap()).unwrap();
    let plan = gridbuf::gtscript::compile(&text).unwrap();
    let _ = gridbuf::gtscript::Jit::compile(&plan).unwrap();
}
