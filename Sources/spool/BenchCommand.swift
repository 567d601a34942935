enum BenchCommand { static func run(_ words: [String]) throws {} }
