import Foundation

extension NginxServer {
    /// The small HTML body of the `/status/<code>` answers.
    static func statusPage(_ code: Int) -> String {
        "<html><head><title>\(code)</title></head><body><h1>\(code)</h1></body></html>"
    }

    /// The body of the `/html/` answers: what a captive portal or a broken link serves in place
    /// of audio, with status 200.
    static let htmlPage = "<html><head><title>Not audio</title></head><body>an error page served as 200</body></html>"

    /// nginx's configuration for a server of `root` on 127.0.0.1 at `port`, every file it
    /// writes in `directory`.
    static func configuration(root: URL, directory: URL, port: Int) -> String {
        let root = root.path
        let here = directory.path
        let statuses = [403, 404, 500].map { code in
            """
                    location = /status/\(code) {
                        types {
                        }
                        default_type text/html;
                        return \(code) "\(statusPage(code))";
                    }
            """
        }.joined(separator: "\n")
        return """
            daemon off;
            master_process off;
            worker_processes 1;
            error_log "\(here)/error.log" info;
            pid "\(here)/nginx.pid";

            events {
                worker_connections 256;
            }

            http {
                access_log "\(here)/access.log";
                client_body_temp_path "\(here)/temp/client_body";
                proxy_temp_path "\(here)/temp/proxy";
                fastcgi_temp_path "\(here)/temp/fastcgi";
                uwsgi_temp_path "\(here)/temp/uwsgi";
                scgi_temp_path "\(here)/temp/scgi";

                types {
                    audio/mpeg mp3;
                    audio/ogg ogg opus;
                    audio/flac flac;
                    audio/wav wav;
                    audio/aiff aiff;
                    audio/x-caf caf;
                    text/html html;
                }
                default_type application/octet-stream;
                # A relative Location, so that a client behind a FaultProxy stays behind it.
                absolute_redirect off;

                server {
                    listen 127.0.0.1:\(port);
                    root "\(root)";

                    location / {
                    }
                    location ~ ^/rate/(\\d+)/(.+)$ {
                        set $limit_rate $1;
                        alias "\(root)/$2";
                    }
                    location ~ ^/redirect/(.+)$ {
                        return 302 /$1;
                    }
                    location ~ ^/redirect-twice/(.+)$ {
                        return 302 /redirect/$1;
                    }
            \(statuses)
                    # No types: the page is text/html whatever the path's extension.
                    location ^~ /html/ {
                        types {
                        }
                        default_type text/html;
                        return 200 "\(htmlPage)";
                    }
                }
            }

            """
    }
}
